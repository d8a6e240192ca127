#!/bin/sh
# Prints the golden bytes of Flink 1.20.1's KryoSerializer (pipeline.force-kryo) and
# PojoSerializer for statebench's value types. The classpath is a Flink cluster's lib/:
# flink-dist, flink-scala (which makes Kryo use chill's Scala registrations) and log4j.
# Usage: tests/kryo-golden/run.sh [flink-lib-dir]   (default ~/.cache/flink/1.20.1)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:-$HOME/.cache/flink/1.20.1}
cp="$lib/flink-dist-1.20.1.jar:$lib/flink-scala_2.12-1.20.1.jar"
for j in "$lib"/log4j-*.jar; do cp="$cp:$j"; done
if [ "${KRYO_GOLDEN_NO_SCALA:-}" = 1 ]; then
    cp=$(echo "$cp" | sed 's|[^:]*flink-scala[^:]*:||')
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
javac -d "$out" -cp "$cp" "$here"/KryoGolden.java "$here"/statebench/parity/*.java
java --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED \
    -cp "$out:$cp" KryoGolden
