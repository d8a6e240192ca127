//! A value owned by a thread of its own: requests reach it in order through a bounded channel,
//! some answered, most not. The oracle and the in-process store run this way, off the thread
//! whose speed a run reports.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The worker cannot answer: its thread stopped (it panicked: a bug, whose message this
/// carries), or its handler gave no answer to a question.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the {what} thread {why}")]
pub struct WorkerGone {
    pub what: &'static str,
    /// "stopped" (with the panic's message), or "gave no answer".
    pub why: String,
}

/// A request, and where its answer goes if it is a question.
enum Message<Request, Reply> {
    Tell(Request),
    Ask(Request, SyncSender<Reply>),
}

pub struct Worker<Request, Reply> {
    what: &'static str,
    requests: Option<SyncSender<Message<Request, Reply>>>,
    thread: Option<JoinHandle<()>>,
    /// The thread's panic message, once it has panicked.
    panic: Arc<Mutex<Option<String>>>,
}

impl<Request: Send + 'static, Reply: Send + 'static> Worker<Request, Reply> {
    /// Starts a thread named `statebench-{what}` that owns `state` and calls `handle` on each
    /// request, in order; `handle`'s answer to a question goes back to [`Worker::ask`] (to a
    /// request that was only told, it is dropped). At most `in_flight` requests wait: a sender
    /// beyond that waits for the worker.
    pub fn spawn<State: Send + 'static>(
        what: &'static str,
        in_flight: usize,
        mut state: State,
        mut handle: impl FnMut(&mut State, Request) -> Option<Reply> + Send + 'static,
    ) -> Result<Self, std::io::Error> {
        let (requests, inbox) = sync_channel::<Message<Request, Reply>>(in_flight);
        let panic = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&panic);
        let thread = std::thread::Builder::new()
            .name(format!("statebench-{what}"))
            .spawn(move || {
                for message in inbox.iter() {
                    let (request, reply) = match message {
                        Message::Tell(request) => (request, None),
                        Message::Ask(request, reply) => (request, Some(reply)),
                    };
                    match std::panic::catch_unwind(AssertUnwindSafe(|| handle(&mut state, request)))
                    {
                        // No answer drops `reply`: the asker hears that at once.
                        Ok(answer) => {
                            if let (Some(answer), Some(reply)) = (answer, reply) {
                                let _ = reply.send(answer);
                            }
                        }
                        // The message is kept before `reply` and the channel close, so the
                        // sender that finds them closed finds it too.
                        Err(payload) => {
                            let message = payload
                                .downcast_ref::<&str>()
                                .map(ToString::to_string)
                                .or_else(|| payload.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "a panic without a message".to_string());
                            if let Ok(mut slot) = slot.lock() {
                                *slot = Some(message);
                            }
                            return;
                        }
                    }
                }
            })?;
        Ok(Worker {
            what,
            requests: Some(requests),
            thread: Some(thread),
            panic,
        })
    }

    fn gone(&self, why: &str) -> WorkerGone {
        // A lock poisoned by a panic elsewhere only loses the message.
        let panic = self.panic.lock().ok().and_then(|m| m.clone());
        WorkerGone {
            what: self.what,
            why: panic.map_or_else(|| why.to_string(), |m| format!("stopped: {m}")),
        }
    }

    fn post(&self, message: Message<Request, Reply>) -> Result<(), WorkerGone> {
        self.requests
            .as_ref()
            .and_then(|r| r.send(message).ok())
            .ok_or_else(|| self.gone("stopped"))
    }

    /// Queues a request that has no answer.
    pub fn send(&self, request: Request) -> Result<(), WorkerGone> {
        self.post(Message::Tell(request))
    }

    /// Queues a request that has an answer (after every request before it), and waits for it.
    pub fn ask(&self, request: Request) -> Result<Reply, WorkerGone> {
        let (reply, answer) = sync_channel(1);
        self.post(Message::Ask(request, reply))?;
        answer.recv().map_err(|_| {
            let finished = self.thread.as_ref().is_none_or(JoinHandle::is_finished);
            self.gone(if finished {
                "stopped"
            } else {
                "gave no answer"
            })
        })
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
        // A question without an answer is an error, not a wait for ever.
        let err = worker.ask(7).unwrap_err();
        assert_eq!(err.to_string(), "the test thread gave no answer");
        assert_eq!(worker.ask(0).unwrap(), 5057);
    }

    #[test]
    fn a_worker_that_panicked_is_reported_gone_with_its_message() {
        let worker = Worker::spawn("doomed", 1, (), |_: &mut (), n: u32| -> Option<u32> {
            assert!(n < 5, "a bug at {n}");
            Some(n)
        })
        .unwrap();
        assert_eq!(worker.ask(1).unwrap(), 1);
        let gone = worker.ask(9).unwrap_err();
        assert_eq!(gone.to_string(), "the doomed thread stopped: a bug at 9");
    }
}
