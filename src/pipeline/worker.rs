//! A value owned by a thread of its own: requests reach it in order through a bounded channel,
//! some answered, most not. The oracle and the in-process store run this way, off the thread
//! whose speed a run reports.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// The worker's thread has gone (it panicked: a bug, which the caller reports).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the {0} thread stopped")]
pub struct WorkerGone(pub &'static str);

pub struct Worker<Request, Reply> {
    what: &'static str,
    requests: Option<SyncSender<Request>>,
    replies: Receiver<Reply>,
    thread: Option<JoinHandle<()>>,
}

impl<Request: Send + 'static, Reply: Send + 'static> Worker<Request, Reply> {
    /// Starts a thread named `statebench-{what}` that owns `state` and calls `handle` on each
    /// request, in order; `handle`'s answer, if any, goes back to [`Worker::ask`]. At most
    /// `in_flight` requests wait: a sender beyond that waits for the worker.
    pub fn spawn<State: Send + 'static>(
        what: &'static str,
        in_flight: usize,
        mut state: State,
        mut handle: impl FnMut(&mut State, Request) -> Option<Reply> + Send + 'static,
    ) -> Result<Self, std::io::Error> {
        let (requests, inbox) = sync_channel::<Request>(in_flight);
        let (outbox, replies) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name(format!("statebench-{what}"))
            .spawn(move || {
                for request in inbox {
                    if let Some(reply) = handle(&mut state, request)
                        && outbox.send(reply).is_err()
                    {
                        return;
                    }
                }
            })?;
        Ok(Worker {
            what,
            requests: Some(requests),
            replies,
            thread: Some(thread),
        })
    }

    /// Queues a request that has no answer.
    pub fn send(&self, request: Request) -> Result<(), WorkerGone> {
        self.requests
            .as_ref()
            .and_then(|r| r.send(request).ok())
            .ok_or(WorkerGone(self.what))
    }

    /// Queues a request that has an answer (after every request before it), and waits for it.
    pub fn ask(&self, request: Request) -> Result<Reply, WorkerGone> {
        self.send(request)?;
        self.replies.recv().map_err(|_| WorkerGone(self.what))
    }
}

impl<Request, Reply> Drop for Worker<Request, Reply> {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_handled_in_order_and_asked_ones_answered() {
        let worker = Worker::spawn("test", 2, Vec::new(), |seen: &mut Vec<u32>, n: u32| {
            if n == 0 {
                Some(seen.iter().sum::<u32>())
            } else {
                seen.push(n);
                None
            }
        })
        .unwrap();
        for n in 1..=100 {
            worker.send(n).unwrap();
        }
        assert_eq!(worker.ask(0).unwrap(), 5050);
    }

    #[test]
    fn a_worker_that_panicked_is_reported_gone() {
        let worker = Worker::spawn("doomed", 1, (), |_: &mut (), n: u32| -> Option<u32> {
            assert!(n < 5, "a bug");
            Some(n)
        })
        .unwrap();
        assert_eq!(worker.ask(1).unwrap(), 1);
        let gone = worker.ask(9).unwrap_err();
        assert_eq!(gone.to_string(), "the doomed thread stopped");
    }
}
