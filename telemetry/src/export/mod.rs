//! The exporter: a bounded span queue and a thread of its own that batches spans, posts them
//! (and the metrics, on their interval) to the collector, and retries when asked to.
//!
//! A call's only contact with it is [`Exporter::enqueue`], a `try_send` into a bounded channel:
//! O(1), never blocking, never failing the call. When the queue is full (the collector is down or
//! slow and the thread is busy retrying) the span is dropped and counted. The thread runs its own
//! current-thread tokio runtime, so the exporter needs no reactor from its caller (an async
//! client on the SDK's batch exporter panics without one) and never takes a worker of the
//! daemon's runtime.
//!
//! The thread is not woken per span (a wake-up is a system call and a context switch, several
//! microseconds on a busy machine): it takes what is queued every `scheduleDelay`, and a caller
//! wakes it only when its span makes the queue reach `maxExportBatchSize`. Each request is
//! retried as `retry::decide` says; what is dropped is counted by reason (queue full, refused by
//! the collector, given up), and `health` shows the counts and the last error, which never
//! quotes a header.

pub(crate) mod http;
pub mod retry;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceResponse;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::metrics::{Metrics, unix_nanos_now};
use crate::otlp;
use crate::settings::BatchSettings;
use crate::span::SpanRecord;
use http::{Answer, Collector};
use retry::{Attempt, Decision, DropReason, RetryPolicy};

/// What the caller asks of the thread besides spans.
enum Control {
    /// Export everything queued so far (and the metrics), then answer.
    Flush(oneshot::Sender<()>),
    /// As `Flush`, then stop.
    Shutdown(oneshot::Sender<()>),
}

/// The exporter's counters, shared with `health`.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) enqueued: AtomicU64,
    pub(crate) exported: AtomicU64,
    pub(crate) dropped_queue_full: AtomicU64,
    pub(crate) dropped_refused: AtomicU64,
    pub(crate) dropped_failed: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) metric_exports: AtomicU64,
    pub(crate) metric_export_failures: AtomicU64,
    pub(crate) last_error: Mutex<Option<String>>,
}

impl Counters {
    fn error(&self, message: String) {
        *self
            .last_error
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(message);
    }
}

/// What the thread is started with.
pub(crate) struct Setup {
    pub(crate) traces: Option<Collector>,
    pub(crate) metrics: Option<(Collector, Arc<Metrics>)>,
    pub(crate) resource: Resource,
    pub(crate) batch: BatchSettings,
    pub(crate) metric_export_interval: Duration,
    pub(crate) metric_export_timeout: Duration,
    pub(crate) retry: RetryPolicy,
}

/// The queue's fill level, shared by callers and the thread: a caller whose span makes it
/// reach a batch wakes the thread.
#[derive(Debug, Default)]
struct Fill {
    queued: AtomicUsize,
    batch_ready: Notify,
}

/// The caller's side: the queue and the counters.
pub(crate) struct Exporter {
    spans: Option<mpsc::Sender<SpanRecord>>,
    control: mpsc::UnboundedSender<Control>,
    fill: Arc<Fill>,
    batch_size: usize,
    pub(crate) counters: Arc<Counters>,
    pub(crate) queue_capacity: usize,
}

impl Exporter {
    /// Starts the thread.
    pub(crate) fn start(setup: Setup) -> std::io::Result<Exporter> {
        let queue_capacity = setup.batch.max_queue_size;
        let (spans, spans_receiver) = if setup.traces.is_some() {
            let (sender, receiver) = mpsc::channel(queue_capacity);
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        let (control, control_receiver) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters::default());
        let fill = Arc::new(Fill::default());
        let batch_size = setup.batch.max_export_batch_size;
        let thread_fill = Arc::clone(&fill);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let thread_counters = Arc::clone(&counters);
        std::thread::Builder::new()
            .name("tool-cli-otlp".to_owned())
            .spawn(move || {
                runtime.block_on(
                    Worker::new(setup, thread_counters, thread_fill)
                        .run(spans_receiver, control_receiver),
                );
            })?;
        Ok(Exporter {
            spans,
            control,
            fill,
            batch_size,
            counters,
            queue_capacity,
        })
    }

    /// Hands a span to the thread: O(1), never blocks; a full queue drops it (counted).
    pub(crate) fn enqueue(&self, span: SpanRecord) {
        let Some(spans) = &self.spans else {
            return;
        };
        self.counters.enqueued.fetch_add(1, Ordering::Relaxed);
        // Counted before the send, so the thread (which subtracts what it takes) never sees
        // the count below what the channel holds.
        let queued = self.fill.queued.fetch_add(1, Ordering::AcqRel) + 1;
        if spans.try_send(span).is_err() {
            self.fill.queued.fetch_sub(1, Ordering::AcqRel);
            self.counters
                .dropped_queue_full
                .fetch_add(1, Ordering::Relaxed);
            return;
        }
        // `try_send` wakes nobody (the thread never waits in `recv`); only the span that
        // completes a batch does.
        if queued == self.batch_size {
            self.fill.batch_ready.notify_one();
        }
    }

    /// Spans waiting in the queue.
    pub(crate) fn queued(&self) -> usize {
        // Senders racing on a full queue count themselves for a moment before they give up.
        self.fill
            .queued
            .load(Ordering::Relaxed)
            .min(self.queue_capacity)
    }

    /// Waits (at most `timeout`) until everything queued before now has been exported or
    /// dropped, and the metrics exported; `false` if that took longer.
    pub(crate) async fn flush(&self, timeout: Duration) -> bool {
        self.ask(Control::Flush, timeout).await
    }

    /// As `flush`, then stops the thread.
    pub(crate) async fn shutdown(&self, timeout: Duration) -> bool {
        self.ask(Control::Shutdown, timeout).await
    }

    async fn ask(&self, make: fn(oneshot::Sender<()>) -> Control, timeout: Duration) -> bool {
        let (done, finished) = oneshot::channel();
        if self.control.send(make(done)).is_err() {
            return false;
        }
        matches!(tokio::time::timeout(timeout, finished).await, Ok(Ok(())))
    }
}

/// The thread's side.
struct Worker {
    setup: Setup,
    counters: Arc<Counters>,
    fill: Arc<Fill>,
    batch: Vec<SpanRecord>,
}

impl Worker {
    fn new(setup: Setup, counters: Arc<Counters>, fill: Arc<Fill>) -> Worker {
        let capacity = setup.batch.max_export_batch_size;
        Worker {
            setup,
            counters,
            fill,
            batch: Vec::with_capacity(capacity),
        }
    }

    async fn run(
        mut self,
        mut spans: Option<mpsc::Receiver<SpanRecord>>,
        mut control: mpsc::UnboundedReceiver<Control>,
    ) {
        let delay = self.setup.batch.schedule_delay;
        let mut next_tick = tokio::time::Instant::now() + delay;
        let mut next_metrics = tokio::time::Instant::now() + self.setup.metric_export_interval;
        let metrics_on = self.setup.metrics.is_some();
        let fill = Arc::clone(&self.fill);
        loop {
            tokio::select! {
                biased;
                request = control.recv() => {
                    let stopping = !matches!(request, Some(Control::Flush(_)));
                    self.drain(&mut spans, true).await;
                    self.export_metrics().await;
                    match request {
                        Some(Control::Flush(done)) | Some(Control::Shutdown(done)) => {
                            let _ = done.send(());
                        }
                        None => {}
                    }
                    if stopping {
                        return;
                    }
                }
                () = fill.batch_ready.notified() => {
                    // Full batches now; a remainder waits for the tick.
                    self.drain(&mut spans, false).await;
                }
                () = tokio::time::sleep_until(next_tick) => {
                    self.drain(&mut spans, true).await;
                    next_tick = tokio::time::Instant::now() + delay;
                }
                () = tokio::time::sleep_until(next_metrics), if metrics_on => {
                    self.export_metrics().await;
                    next_metrics = tokio::time::Instant::now() + self.setup.metric_export_interval;
                }
            }
        }
    }

    /// Takes everything queued now and exports it batch by batch; the last, partial batch
    /// only when `everything` (a tick, a flush), else it waits in `self.batch`.
    async fn drain(&mut self, spans: &mut Option<mpsc::Receiver<SpanRecord>>, everything: bool) {
        if let Some(receiver) = spans {
            while let Ok(span) = receiver.try_recv() {
                self.fill.queued.fetch_sub(1, Ordering::AcqRel);
                self.batch.push(span);
                if self.batch.len() >= self.setup.batch.max_export_batch_size {
                    self.export_batch().await;
                }
            }
        }
        if everything {
            self.export_batch().await;
        }
    }

    async fn export_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.batch);
        self.batch.reserve(self.setup.batch.max_export_batch_size);
        let count = spans.len() as u64;
        let body = otlp::trace_request(&self.setup.resource, &spans).encode_to_vec();
        drop(spans);
        let budget = self.setup.batch.export_timeout;
        let Some(collector) = self.setup.traces.as_mut() else {
            return;
        };
        match deliver(collector, body, budget, &self.setup.retry, &self.counters).await {
            Ok(answer) => {
                let rejected = ExportTraceServiceResponse::decode(answer.body)
                    .ok()
                    .and_then(|response| response.partial_success)
                    .map(|partial| {
                        if partial.rejected_spans > 0 || !partial.error_message.is_empty() {
                            self.counters.error(format!(
                                "the collector rejected {} of {count} spans: {}",
                                partial.rejected_spans,
                                clip(&partial.error_message)
                            ));
                        }
                        partial.rejected_spans.clamp(0, count as i64) as u64
                    })
                    .unwrap_or(0);
                self.counters
                    .exported
                    .fetch_add(count - rejected, Ordering::Relaxed);
                self.counters
                    .dropped_refused
                    .fetch_add(rejected, Ordering::Relaxed);
            }
            Err(reason) => {
                let (counter, message) = match reason {
                    DropReason::Refused(status) => (
                        &self.counters.dropped_refused,
                        format!(
                            "the collector refused {count} spans with HTTP {status}{}; they were \
                             dropped",
                            match status {
                                413 => " (the request was too large: lower maxExportBatchSize)",
                                400 => " (it could not read the request)",
                                _ => "",
                            }
                        ),
                    ),
                    DropReason::GaveUp => (
                        &self.counters.dropped_failed,
                        format!(
                            "{count} spans dropped: the collector at {} stayed unavailable ({})",
                            collector.endpoint_display(),
                            self.counters
                                .last_error
                                .lock()
                                .unwrap_or_else(|poisoned| poisoned.into_inner())
                                .clone()
                                .unwrap_or_default()
                        ),
                    ),
                };
                counter.fetch_add(count, Ordering::Relaxed);
                self.counters.error(message);
            }
        }
    }

    async fn export_metrics(&mut self) {
        let Some((collector, metrics)) = self.setup.metrics.as_mut() else {
            return;
        };
        let Some(request) = otlp::metrics_request(&self.setup.resource, metrics, unix_nanos_now())
        else {
            return;
        };
        let body = request.encode_to_vec();
        let budget = self.setup.metric_export_timeout;
        match deliver(collector, body, budget, &self.setup.retry, &self.counters).await {
            Ok(answer) => {
                self.counters.metric_exports.fetch_add(1, Ordering::Relaxed);
                if let Some(partial) = ExportMetricsServiceResponse::decode(answer.body)
                    .ok()
                    .and_then(|response| response.partial_success)
                    .filter(|partial| partial.rejected_data_points > 0)
                {
                    self.counters.error(format!(
                        "the collector rejected {} metric data points: {}",
                        partial.rejected_data_points,
                        clip(&partial.error_message)
                    ));
                }
            }
            Err(reason) => {
                self.counters
                    .metric_export_failures
                    .fetch_add(1, Ordering::Relaxed);
                // Metrics are cumulative: the next export carries everything again.
                self.counters.error(match reason {
                    DropReason::Refused(status) => {
                        format!("the collector refused the metrics with HTTP {status}")
                    }
                    DropReason::GaveUp => format!(
                        "metrics not exported: the collector at {} was unavailable",
                        collector.endpoint_display()
                    ),
                });
            }
        }
    }
}

/// Posts `body` until `retry::decide` says it was delivered or must be dropped.
async fn deliver(
    collector: &mut Collector,
    body: Vec<u8>,
    budget: Duration,
    policy: &RetryPolicy,
    counters: &Counters,
) -> Result<Answer, DropReason> {
    let body = collector.encode_body(body);
    let started = Instant::now();
    let mut attempt = 1;
    loop {
        counters.requests.fetch_add(1, Ordering::Relaxed);
        let outcome = collector.post(body.clone()).await;
        let decision = match &outcome {
            Ok(answer) => retry::decide(
                &Attempt::Answered {
                    status: answer.status,
                    retry_after: answer.retry_after.as_deref(),
                },
                attempt,
                started.elapsed(),
                budget,
                policy,
                rand::random::<f64>(),
                SystemTime::now(),
            ),
            Err(error) => {
                counters.error(format!(
                    "export to {} failed: {error}",
                    collector.endpoint_display()
                ));
                retry::decide(
                    &Attempt::NoAnswer,
                    attempt,
                    started.elapsed(),
                    budget,
                    policy,
                    rand::random::<f64>(),
                    SystemTime::now(),
                )
            }
        };
        match decision {
            Decision::Delivered => {
                return outcome.map_err(|_| DropReason::GaveUp);
            }
            Decision::Drop(reason) => return Err(reason),
            Decision::RetryAfter(delay) => {
                if let Ok(answer) = &outcome {
                    counters.error(format!(
                        "the collector at {} answered HTTP {}; retrying in {} ms",
                        collector.endpoint_display(),
                        answer.status,
                        delay.as_millis()
                    ));
                }
                counters.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
        }
    }
}

/// A collector's message, cut for `health`.
fn clip(message: &str) -> String {
    let mut clipped: String = message.chars().take(200).collect();
    if clipped.len() < message.len() {
        clipped.push('…');
    }
    clipped
}
