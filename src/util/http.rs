//! Plain HTTP/1.1, enough for Flink's REST API (JSON over `http://`, as a JobManager serves it
//! by default): GET, and POST or PATCH with a body; one request per connection, the answer's
//! body by Content-Length, chunks, or until the server closes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Why a request failed, naming the URL.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{url}: only http:// URLs are read (host:port, e.g. http://localhost:8081)")]
    Url { url: String },
    // `error`, not `source`: its text is in the message already, not a cause to print again.
    #[error("cannot reach {url}: {error}")]
    Connect { url: String, error: std::io::Error },
    #[error("{url}: {error}")]
    Io { url: String, error: std::io::Error },
    #[error("{url}: not an HTTP response ({why})")]
    Malformed { url: String, why: String },
}

/// A response: its status code and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// `http://host[:port]` and the path after it (`/` if none).
pub fn split_url(url: &str) -> Result<(String, String), HttpError> {
    let rest = url.strip_prefix("http://").ok_or_else(|| HttpError::Url {
        url: url.to_string(),
    })?;
    let (host, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if host.is_empty() {
        return Err(HttpError::Url {
            url: url.to_string(),
        });
    }
    let host = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    Ok((host, path.to_string()))
}

/// GETs `base` joined with `path` (which starts with '/').
pub fn get(base: &str, path: &str, timeout: Duration) -> Result<Response, HttpError> {
    request("GET", base, path, None, timeout)
}

/// A request body and its content type.
pub struct Body<'a> {
    pub content_type: &'a str,
    pub bytes: &'a [u8],
}

/// `method` (GET, POST, PATCH) on `base` joined with `path`, with `body` if any.
pub fn request(
    method: &str,
    base: &str,
    path: &str,
    body: Option<Body<'_>>,
    timeout: Duration,
) -> Result<Response, HttpError> {
    let (host, prefix) = split_url(base)?;
    let url = format!("http://{host}{}{path}", prefix.trim_end_matches('/'));
    let io = |error| HttpError::Io {
        url: url.clone(),
        error,
    };
    let addr = host
        .to_socket_addrs()
        .map_err(|error| HttpError::Connect {
            url: url.clone(),
            error,
        })?
        .next()
        .ok_or_else(|| HttpError::Connect {
            url: url.clone(),
            error: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
        })?;
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|error| HttpError::Connect {
            url: url.clone(),
            error,
        })?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let full_path = format!("{}{path}", prefix.trim_end_matches('/'));
    let mut head = format!(
        "{method} {full_path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    if let Some(b) = &body {
        head.push_str(&format!(
            "Content-Type: {}\r\nContent-Length: {}\r\n",
            b.content_type,
            b.bytes.len()
        ));
    } else if method != "GET" {
        head.push_str("Content-Length: 0\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).map_err(io)?;
    if let Some(b) = &body {
        stream.write_all(b.bytes).map_err(io)?;
    }
    let mut reader = BufReader::new(stream);
    let malformed = |why: &str| HttpError::Malformed {
        url: url.clone(),
        why: why.to_string(),
    };
    let mut line = String::new();
    reader.read_line(&mut line).map_err(io)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| malformed(&format!("status line {:?}", line.trim())))?;
    let (mut length, mut chunked) = (None, false);
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(io)? == 0 {
            return Err(malformed("the headers end early"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name == "content-length" {
                length = value.parse::<usize>().ok();
            } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).map_err(io)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| malformed(&format!("chunk size {:?}", line.trim())))?;
            if size == 0 {
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).map_err(io)?;
            line.clear();
            reader.read_line(&mut line).map_err(io)?;
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        reader.read_exact(&mut body).map_err(io)?;
    } else {
        reader.read_to_end(&mut body).map_err(io)?;
    }
    Ok(Response {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves `reply` to one connection.
    fn serve(reply: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            // The whole request first: a reply to an unread request may be reset.
            let (mut seen, mut buf) = (Vec::new(), [0u8; 1024]);
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            s.write_all(reply.as_bytes()).unwrap();
        });
        format!("http://127.0.0.1:{port}")
    }

    #[test]
    fn reads_a_body_by_length_and_by_chunks() {
        let base = serve("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
        let r = get(&base, "/config", Duration::from_secs(5)).unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "{\"a\":1}"));
        let base = serve(
            "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"e\r\n2\r\n\"}\r\n0\r\n\r\n",
        );
        let r = get(&base, "/jobs/x", Duration::from_secs(5)).unwrap();
        assert_eq!((r.status, r.body.as_str()), (404, "{\"e\"}"));
    }

    #[test]
    fn a_closed_port_and_a_wrong_scheme_say_so() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = get(
            &format!("http://127.0.0.1:{port}"),
            "/config",
            Duration::from_secs(2),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("cannot reach"), "{e}");
        let e = get("https://flink:8081", "/config", Duration::from_secs(2)).unwrap_err();
        assert!(e.to_string().contains("only http://"), "{e}");
    }
}
