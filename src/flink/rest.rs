//! The part of Flink's REST API `flink run` drives: the cluster's version and slots, jar upload
//! (`POST /jars/upload`), run (`POST /jars/:id/run`), a job's state and failure
//! (`GET /jobs/:id`, `/jobs/:id/exceptions`) and cancel (`PATCH /jobs/:id?mode=cancel`).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::FlinkError;
use crate::util::http::{self, Body};

const TIMEOUT: Duration = Duration::from_secs(30);

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
        let r = http::request(method, &self.url, path, body, TIMEOUT).map_err(|e| {
            FlinkError::Rest(format!(
                "{e} (is the cluster running, and is {} its REST address?)",
                self.url
            ))
        })?;
        let parsed: Option<Value> = serde_json::from_str(&r.body).ok();
        if !(200..300).contains(&r.status) {
            // Flink answers errors as {"errors": ["<exception>: <message>\n\tat ..."]}.
            let why = parsed
                .as_ref()
                .and_then(|v| v["errors"][0].as_str())
                .and_then(|e| e.lines().find(|l| !l.trim().is_empty()))
                .map(str::to_string)
                .unwrap_or_else(|| r.body.chars().take(300).collect());
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
        let answer = self.call(
            "POST",
            &format!("/jars/{jar_id}/run"),
            Some(Body {
                content_type: "application/json",
                bytes: body.as_bytes(),
            }),
        )?;
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

    pub fn cancel(&self, job: &str) -> Result<(), FlinkError> {
        self.call("PATCH", &format!("/jobs/{job}?mode=cancel"), None)
            .map(|_| ())
    }
}
