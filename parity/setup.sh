# Sourced by parity/run, parity/run-kinds and parity/export-check (from the repository root,
# `repo` set): installs a JDK if javac is missing, brings Flink 1.20.1's lib/ into
# $PARITY_CACHE, compiles the parity job, builds statebench (unless PARITY_STATEBENCH names a
# binary, or PARITY_NO_STATEBENCH=1 says the script needs none: statebench is then empty) and
# generates the trace. Sets: step, cache, target, work, lib, classpath, bash_java_utils, classes,
# statebench, java_opts. Each step is skipped when its output is current.

FLINK_VERSION=1.20.1
# sha256 of PyPI's apache-flink-libraries-1.20.1.tar.gz (the sdist that holds a cluster's lib/).
TARBALL_SHA256=be28293619b1d7b04c970b947133ae8d0ca86681f23694be063b3659ea69bb79
cache="${PARITY_CACHE:-$HOME/.cache/flink}"
target="${CARGO_TARGET_DIR:-$repo/target}"
work="${PARITY_WORK:-$target/parity}"
step() { printf '\n[parity %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# --- JDK ------------------------------------------------------------------------------------
if ! command -v javac >/dev/null 2>&1; then
  step "installing openjdk-17-jdk-headless (javac not found)"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi

# --- Flink 1.20.1 jars (PyPI's apache-flink-libraries sdist holds a cluster's lib/) ---------
lib="$cache/$FLINK_VERSION"
tarball="$cache/apache-flink-libraries-$FLINK_VERSION.tar.gz"
# The sdist in the cache, downloaded once and checked against its sha256.
fetch_tarball() {
  mkdir -p "$cache"
  if [ ! -f "$tarball" ]; then
    step "downloading apache-flink-libraries==$FLINK_VERSION into $cache"
    python3 -m pip download --quiet --no-deps --no-binary :all: \
      "apache-flink-libraries==$FLINK_VERSION" -d "$cache"
  fi
  actual=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [ "$actual" != "$TARBALL_SHA256" ]; then
    echo "$tarball has sha256 $actual, expected $TARBALL_SHA256 (a partial download? delete it and run again)" >&2
    exit 1
  fi
}
if [ ! -f "$lib/flink-dist-$FLINK_VERSION.jar" ]; then
  fetch_tarball
  step "extracting Flink's lib/ into $lib"
  tmp=$(mktemp -d "$cache/extract.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  tar xzf "$tarball" -C "$tmp" "apache-flink-libraries-$FLINK_VERSION/deps/lib"
  # Into place only once complete: an interrupted extraction leaves no half-written lib/.
  rm -rf "$lib"
  mv "$tmp/apache-flink-libraries-$FLINK_VERSION/deps/lib" "$lib"
  rm -rf "$tmp"
  trap - EXIT
fi
# Flink's bin/bash-java-utils.jar (the TaskManager memory calculator its scripts run), from the
# same sdist: extracted on its own, so a cache made before it was needed gets it too.
bash_java_utils="$cache/$FLINK_VERSION-bin/bash-java-utils.jar"
if [ ! -f "$bash_java_utils" ]; then
  fetch_tarball
  step "extracting Flink's bin/bash-java-utils.jar into $cache/$FLINK_VERSION-bin"
  tmp=$(mktemp -d "$cache/extract.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  tar xzf "$tarball" -C "$tmp" "apache-flink-libraries-$FLINK_VERSION/deps/bin/bash-java-utils.jar"
  mkdir -p "$cache/$FLINK_VERSION-bin"
  mv "$tmp/apache-flink-libraries-$FLINK_VERSION/deps/bin/bash-java-utils.jar" "$bash_java_utils"
  rm -rf "$tmp"
  trap - EXIT
fi
# What a real cluster's lib/ puts on the classpath that matters here: flink-dist (DataStream API,
# MiniCluster, RocksDB backend, FRocksDB), flink-scala (it changes Kryo's registrations), log4j.
classpath=$(ls "$lib"/flink-dist-*.jar "$lib"/flink-scala_*.jar "$lib"/log4j-*.jar | tr '\n' ':')

# --- the Flink job ---------------------------------------------------------------------------
classes="$work/classes"
sources=("$repo"/parity/job/src/main/java/statebench/parity/*.java "$repo"/parity/job/src/main/java/statebench/parity/kinds/*.java)
if [ ! -f "$classes/.built" ] || [ -n "$(find "${sources[@]}" -newer "$classes/.built")" ]; then
  step "compiling the Flink job (javac) into $classes"
  rm -rf "$classes"
  mkdir -p "$classes"
  javac -nowarn -Xlint:-options -d "$classes" -cp "$classpath" "${sources[@]}"
  touch "$classes/.built"
fi

# --- statebench --------------------------------------------------------------------------------
# PARITY_STATEBENCH: a statebench binary already built (.ci/run passes the one `cargo test
# --release` built and tested; `cargo build` would compile it again, as the dev-dependencies
# unify some dependencies' features differently).
if [ -n "${PARITY_STATEBENCH:-}" ]; then
  statebench="$PARITY_STATEBENCH"
  if [ ! -x "$statebench" ]; then
    echo "PARITY_STATEBENCH=$statebench is not an executable statebench binary" >&2
    exit 2
  fi
  step "using statebench $statebench (PARITY_STATEBENCH)"
elif [ "${PARITY_NO_STATEBENCH:-0}" = 1 ]; then
  # A script that runs only Flink (parity/rest-evidence) sets this before sourcing: no build.
  statebench=""
else
  step "building statebench (cargo build --release, target $target)"
  CARGO_TARGET_DIR="$target" cargo build --release --quiet
  statebench="$target/release/statebench"
fi

# --- the trace ---------------------------------------------------------------------------------
mkdir -p "$work"
step "generating the trace (parity/trace.py, seeded)"
python3 parity/trace.py "$work/trace.csv"

# Java 17 and Flink's Kryo / reflection: the opens Flink's own launch scripts pass.
java_opts=(
  --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.lang.invoke=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.text=ALL-UNNAMED
  --add-opens=java.base/java.time=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  -Xmx1g
  "-Dlog4j.configurationFile=$repo/parity/job/log4j2.properties"
)
