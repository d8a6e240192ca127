//! The part of Flink's REST API `flink run` drives: the cluster's version and slots, jar upload
//! (`POST /jars/upload`), run (`POST /jars/:id/run`), a job's state and failure
//! (`GET /jobs/:id`, `/jobs/:id/exceptions`) and cancel (`PATCH /jobs/:id?mode=cancel`).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::FlinkError;
use crate::util::http::{self, Body};

const TIMEOUT: Duration = Duration::from_secs(30);
/// A jar's run: its main() runs in the JobManager first.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone)]
pub struct Rest {
    pub url: String,
}

impl Rest {
    pub fn new(url: &str) -> Rest {
        Rest {
            url: url.trim_end_matches('/').to_string(),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Body<'_>>) -> Result<Value, FlinkError> {
        self.call_within(method, path, body, TIMEOUT)
    }

    fn call_within(
        &self,
        method: &str,
        path: &str,
        body: Option<Body<'_>>,
        timeout: Duration,
    ) -> Result<Value, FlinkError> {
        let r = http::request(method, &self.url, path, body, timeout).map_err(|e| match e {
            // Not a cluster's answer: a URL statebench cannot use (https://, no host).
            http::HttpError::Url { .. } => FlinkError::Setup(e.to_string()),
            e => FlinkError::Rest(format!(
                "{e} (is the cluster running, and is {} its REST address?)",
                self.url
            )),
        })?;
        let parsed: Option<Value> = serde_json::from_str(&r.body).ok();
        if !(200..300).contains(&r.status) {
            // Flink answers errors as {"errors": ["<exception>: <message>\n\tat ...", ...]}:
            // the first line, and the deepest "Caused by" of any of them (a job's main() that
            // failed is "Could not execute application." with its cause below).
            let errors: Vec<&str> = parsed
                .as_ref()
                .and_then(|v| v["errors"].as_array())
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let first = errors
                .first()
                .and_then(|e| e.lines().find(|l| !l.trim().is_empty()));
            let cause = errors
                .iter()
                .flat_map(|e| e.lines())
                .rfind(|l| l.starts_with("Caused by: "))
                .map(|l| l.trim_start_matches("Caused by: "));
            let why = match (first, cause) {
                (Some(first), Some(cause)) => format!("{first} Caused by: {cause}"),
                (Some(first), None) => first.to_string(),
                _ => r.body.chars().take(300).collect(),
            };
            return Err(FlinkError::Rest(format!(
                "{method} {}{path}: HTTP {}: {why}",
                self.url, r.status
            )));
        }
        // PATCH answers 202 with an empty body.
        Ok(parsed.unwrap_or(Value::Null))
    }

    pub fn overview(&self) -> Result<Value, FlinkError> {
        self.call("GET", "/overview", None)
    }

    /// The cluster's Flink version; an error unless it is `major_minor` (e.g. "1.20").
    pub fn check_version(&self, major_minor: &str) -> Result<String, FlinkError> {
        let config = self.call("GET", "/config", None)?;
        let version = config["flink-version"]
            .as_str()
            .unwrap_or("unknown")
            .to_string();
        if !version.starts_with(major_minor) {
            return Err(FlinkError::Rest(format!(
                "{} runs Flink {version}; statebench's job and exported configuration are for Flink {major_minor}.x",
                self.url
            )));
        }
        Ok(version)
    }

    /// An error unless the cluster has `parallelism` free slots now (`GET /overview`): a job
    /// that cannot get them waits, on a user's cluster, until Flink's slot request times out.
    pub fn check_slots(&self, parallelism: u32) -> Result<(), FlinkError> {
        let overview = self.call("GET", "/overview", None)?;
        let (total, free) = (
            overview["slots-total"].as_u64().unwrap_or(0),
            overview["slots-available"].as_u64().unwrap_or(0),
        );
        // A cluster that starts TaskManagers on demand (native Kubernetes, YARN) has none yet.
        if total > 0 && free < u64::from(parallelism) {
            return Err(FlinkError::Setup(format!(
                "{} has {free} free task slots of {total}; --parallelism {parallelism} needs {parallelism} (wait for running jobs to end, add TaskManagers, or lower --parallelism)",
                self.url
            )));
        }
        Ok(())
    }

    /// Uploads `jar`; its id for [`Rest::run_jar`].
    pub fn upload(&self, jar: &Path) -> Result<String, FlinkError> {
        let bytes =
            std::fs::read(jar).map_err(|e| FlinkError::Setup(format!("{}: {e}", jar.display())))?;
        let boundary = "statebench-flink-run-boundary-7d3f";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"statebench-flink-job.jar\"\r\nContent-Type: application/x-java-archive\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(&bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let answer = self.call(
            "POST",
            "/jars/upload",
            Some(Body {
                content_type: &content_type,
                bytes: &body,
            }),
        )?;
        answer["filename"]
            .as_str()
            .and_then(|f| f.rsplit('/').next())
            .map(str::to_string)
            .ok_or_else(|| FlinkError::Rest(format!("the upload's answer names no jar: {answer}")))
    }

    /// Runs `entry_class` of the uploaded jar with `args`; the job's id.
    pub fn run_jar(
        &self,
        jar_id: &str,
        entry_class: &str,
        args: &[String],
    ) -> Result<String, FlinkError> {
        let body =
            serde_json::json!({ "entryClass": entry_class, "programArgsList": args }).to_string();
        // The job's main() runs in the JobManager: an error answer here is the job's failure
        // (a bad argument or configuration), not the cluster's.
        // The answer comes once main() has read the trace and submitted the job graph.
        let answer = self
            .call_within(
                "POST",
                &format!("/jars/{jar_id}/run"),
                Some(Body {
                    content_type: "application/json",
                    bytes: body.as_bytes(),
                }),
                RUN_TIMEOUT,
            )
            .map_err(|e| match e {
                FlinkError::Rest(why) if why.contains(": HTTP ") => {
                    FlinkError::Job(format!("the job did not start: {why}"))
                }
                other => other,
            })?;
        answer["jobid"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| FlinkError::Rest(format!("the run's answer names no job: {answer}")))
    }

    /// The job's state (RUNNING, FINISHED, FAILED, CANCELED, ...).
    pub fn job_state(&self, job: &str) -> Result<String, FlinkError> {
        let answer = self.call("GET", &format!("/jobs/{job}"), None)?;
        Ok(answer["state"].as_str().unwrap_or("UNKNOWN").to_string())
    }

    /// The first line of the job's root exception, if Flink recorded one.
    pub fn failure(&self, job: &str) -> Option<String> {
        let answer = self
            .call("GET", &format!("/jobs/{job}/exceptions"), None)
            .ok()?;
        let root = answer["root-exception"]
            .as_str()
            .or_else(|| answer["exceptionHistory"]["entries"][0]["stacktrace"].as_str())?;
        // The deepest "Caused by" names the cause.
        let line = root
            .lines()
            .rfind(|l| l.starts_with("Caused by: "))
            .or_else(|| root.lines().next())?;
        Some(line.trim_start_matches("Caused by: ").to_string())
    }

    /// Removes an uploaded jar (best effort: the cluster deletes its uploads when it stops).
    pub fn delete_jar(&self, jar_id: &str) {
        let _ = self.call("DELETE", &format!("/jars/{jar_id}"), None);
    }

    /// Managed memory per slot of the cluster's TaskManagers (the smallest, if they differ),
    /// from `/taskmanagers`' memory configuration; None if none is registered.
    pub fn managed_per_slot(&self) -> Result<Option<u64>, FlinkError> {
        let answer = self.call("GET", "/taskmanagers", None)?;
        Ok(crate::flink::diagnose::rest::managed_per_slot(&answer))
    }

    pub fn cancel(&self, job: &str) -> Result<(), FlinkError> {
        self.call("PATCH", &format!("/jobs/{job}?mode=cancel"), None)
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A server answering each request by its first line (`METHOD /path`) from `routes`:
    /// (prefix, status, body); 404 for the rest. It reads the whole request, its body too,
    /// before it answers: a socket closed with a request's bytes unread resets the connection,
    /// and the client may see the reset before the answer (an upload failed that way in CI).
    fn serve(routes: &'static [(&'static str, u16, &'static str)]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { return };
                let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
                let end_of_head = |seen: &[u8]| seen.windows(4).position(|w| w == b"\r\n\r\n");
                while end_of_head(&seen).is_none() {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let body_at = end_of_head(&seen).map_or(seen.len(), |at| at + 4);
                let length: usize = String::from_utf8_lossy(&seen[..body_at])
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while seen.len() < body_at + length {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&seen[..body_at]).into_owned();
                let line = head.lines().next().unwrap_or("").to_string();
                let (status, body) = routes
                    .iter()
                    .find(|(p, _, _)| line.starts_with(p))
                    .map_or((404, "{\"errors\": [\"Not found: /x\"]}"), |(_, s, b)| {
                        (*s, *b)
                    });
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        format!("http://127.0.0.1:{port}")
    }

    #[test]
    fn a_failed_job_names_its_deepest_cause_and_an_error_answer_its_message() {
        // What Flink 1.20 answers for a failed job (abridged): the root exception's deepest
        // "Caused by" is the cause a user acts on.
        static ROUTES: [(&str, u16, &str); 5] = [
            (
                "GET /taskmanagers",
                200,
                r#"{"taskmanagers": [{"slotsNumber": 2, "memoryConfiguration": {"managedMemory": 1073741824}}, {"slotsNumber": 1, "memoryConfiguration": {"managedMemory": 536870912}}]}"#,
            ),
            (
                "GET /jobs/j1/exceptions",
                200,
                r#"{"root-exception": "org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy\n\tat x\nCaused by: java.io.IOException: Could not open RocksDB\n\tat y\nCaused by: org.rocksdb.RocksDBException: No space left on device\n\tat z", "exceptionHistory": {"entries": []}}"#,
            ),
            ("GET /jobs/j1", 200, r#"{"jid": "j1", "state": "FAILED"}"#),
            (
                "GET /jobs/missing",
                404,
                r#"{"errors": ["org.apache.flink.runtime.rest.NotFoundException: Job missing not found\n\tat a"]}"#,
            ),
            (
                "POST /jars/upload",
                200,
                r#"{"filename": "/tmp/flink-web/flink-web-upload/1b2c_statebench-flink-job.jar", "status": "success"}"#,
            ),
        ];
        let rest = Rest::new(&serve(&ROUTES));
        assert_eq!(rest.job_state("j1").unwrap(), "FAILED");
        assert_eq!(
            rest.failure("j1").unwrap(),
            "org.rocksdb.RocksDBException: No space left on device"
        );
        let err = rest.job_state("missing").unwrap_err().to_string();
        assert!(
            err.contains("HTTP 404") && err.contains("Job missing not found"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("job.jar");
        std::fs::write(&jar, b"PK\x03\x04").unwrap();
        assert_eq!(rest.upload(&jar).unwrap(), "1b2c_statebench-flink-job.jar");
        // 1 GiB over 2 slots and 512 MiB over 1: 512 MiB a slot.
        assert_eq!(rest.managed_per_slot().unwrap(), Some(512 << 20));
    }
}
