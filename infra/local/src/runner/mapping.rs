//! The part of the runner that plays Lambda's SQS event source mappings:
//! batches gathered from several receives, the consumer invoked with its
//! timeout as the deadline and ended there, partial batch failures held until their
//! visibility timeout (or the delay the consumer set) on the runner's
//! clock, and what was delivered deleted.

use super::*;

/// The batch a poller gathers while its window is open: received once,
/// held invisible, delivered when full or when the window has passed since
/// `opened` (the first message's receipt, on the runner's clock).
#[derive(Debug, Default)]
pub(super) struct Gathering {
    pub(super) opened: i64,
    pub(super) messages: Vec<aws_sdk_sqs::types::Message>,
}

/// A message a consumer failed, invisible until `due_ms`.
#[derive(Debug, Clone)]
pub(super) struct Held {
    pub(super) queue_url: String,
    pub(super) receipt: String,
    pub(super) due_ms: i64,
}

impl Runner {
    /// What Lambda checks when a mapping is created: the consumer's role
    /// may read the queue's attributes.
    ///
    /// # Errors
    /// [`RunnerError::Sqs`] when the role may not.
    pub async fn check_mappings(&self) -> Result<(), RunnerError> {
        for queue in &self.stack.queues {
            if let Some((function, _)) = &queue.consumer {
                self.consumer_store(function)
                    .sqs
                    .get_queue_attributes()
                    .queue_url(&queue.url)
                    .attribute_names(aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout)
                    .send()
                    .await
                    .map_err(sqs_err)?;
            }
        }
        Ok(())
    }

    /// Polls every consumed queue and invokes its consumer until no queue
    /// has a deliverable message.
    ///
    /// # Errors
    /// [`RunnerError`] when SQS or a handler fails as a whole.
    pub async fn drain(&self) -> Result<DrainReport, RunnerError> {
        let mut report = DrainReport::default();
        for _ in 0..MAX_DRAIN_ROUNDS {
            self.release_due().await?;
            let mut any = false;
            for queue in self.stack.queues.iter().filter(|q| q.consumer.is_some()) {
                if self.deliver_batch(queue, &mut report).await? {
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        Ok(report)
    }

    /// One pass of Lambda's pollers at the runner's clock, as the event
    /// source mappings of the template run them: a queue's batch goes to
    /// its consumer when it is full (the mapping's `BatchSize`) or when the
    /// mapping's `MaximumBatchingWindowInSeconds` has passed since the
    /// poller received the batch's first message; until then the poller
    /// holds what it received (invisible, received once, as Lambda's does).
    /// [`Runner::drain`] is this with every window
    /// closed at once (a test's "run until idle").
    ///
    /// # Errors
    /// [`RunnerError`] when SQS fails.
    pub async fn poll(&self) -> Result<DrainReport, RunnerError> {
        self.release_due().await?;
        let mut report = DrainReport::default();
        for queue in &self.stack.queues {
            let Some((function, batch)) = &queue.consumer else {
                continue;
            };
            let now = self.now();
            let gathering = self.gather(queue, function, *batch, now).await?;
            if gathering.messages.is_empty() {
                continue;
            }
            let full = i64::try_from(gathering.messages.len()).unwrap_or(i64::MAX) >= *batch;
            if !full && now < gathering.opened + queue.batching_window_ms {
                // Lambda's poller keeps what it received while the window
                // is open; the messages stay invisible and are not
                // received again (each receive would count towards the
                // queue's maxReceiveCount).
                self.gathering
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(queue.url.clone(), gathering);
                continue;
            }
            report.batches += 1;
            let messages = gathering.messages;
            let failed = self.invoke(function, sqs_event(queue, &messages)).await;
            self.settle(queue, function, &messages, &failed, &mut report)
                .await?;
        }
        Ok(report)
    }

    /// The batch a queue's poller is gathering: what it holds from earlier
    /// polls, topped up with new receives to the batch size.
    async fn gather(
        &self,
        queue: &LocalQueue,
        function: &str,
        batch: i64,
        now: i64,
    ) -> Result<Gathering, RunnerError> {
        let mut gathering = self
            .gathering
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&queue.url)
            .unwrap_or(Gathering {
                opened: now,
                messages: vec![],
            });
        let room = batch - i64::try_from(gathering.messages.len()).unwrap_or(i64::MAX);
        if room > 0 {
            let more = self.receive_batch(queue, function, room).await?;
            if gathering.messages.is_empty() {
                gathering.opened = now;
            }
            gathering.messages.extend(more);
        }
        Ok(gathering)
    }

    /// One batch from one queue to its consumer (its window closed at
    /// once). Answers whether any message came.
    async fn deliver_batch(
        &self,
        queue: &LocalQueue,
        report: &mut DrainReport,
    ) -> Result<bool, RunnerError> {
        let Some((function, batch)) = &queue.consumer else {
            return Ok(false);
        };
        let messages = self
            .gather(queue, function, *batch, self.now())
            .await?
            .messages;
        if messages.is_empty() {
            return Ok(false);
        }
        report.batches += 1;
        let failed = self.invoke(function, sqs_event(queue, &messages)).await;
        self.settle(queue, function, &messages, &failed, report)
            .await?;
        Ok(true)
    }

    /// Up to the mapping's batch size, gathered from several receives as
    /// Lambda does.
    async fn receive_batch(
        &self,
        queue: &LocalQueue,
        function: &str,
        batch: i64,
    ) -> Result<Vec<aws_sdk_sqs::types::Message>, RunnerError> {
        let batch_size = usize::try_from(batch.max(1)).unwrap_or(1);
        let mut messages = vec![];
        while messages.len() < batch_size {
            let want = (batch_size - messages.len()).clamp(1, 10);
            let out = self
                .consumer_store(function)
                .sqs
                .receive_message()
                .queue_url(&queue.url)
                .max_number_of_messages(want as i32)
                .visibility_timeout(HELD_VISIBILITY_SECS)
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .send()
                .await
                .map_err(sqs_err)?;
            let got = out.messages.unwrap_or_default();
            if got.is_empty() {
                break;
            }
            messages.extend(got);
        }
        Ok(messages)
    }

    /// Invokes the consumer with its timeout as the deadline, and ends it
    /// there; answers the ids of the messages that failed (all of them
    /// when the handler errs or times out, as Lambda fails the whole
    /// batch).
    async fn invoke(&self, function: &str, event: SqsEvent) -> Vec<String> {
        let ids: Vec<String> = event
            .records
            .iter()
            .filter_map(|r| r.message_id.clone())
            .collect();
        let timeout = self.timeout(function);
        let event = LambdaEvent::new(event, context_until(timeout));
        let time = &self.handler_time;
        let response = match function {
            "SyncWorkerFunction" => {
                time.invoke(
                    function,
                    timeout,
                    Box::pin(adtrail_sync_worker::handle(&self.worker, event)),
                )
                .await
            }
            "CapiSenderFunction" => {
                time.invoke(
                    function,
                    timeout,
                    Box::pin(adtrail_capi_sender::handle(&self.sender, event)),
                )
                .await
            }
            "LeadgenWorkerFunction" => {
                time.invoke(
                    function,
                    timeout,
                    Box::pin(adtrail_leadgen_worker::handle(&self.leadgen, event)),
                )
                .await
            }
            other => {
                tracing::warn!(function = other, "no local consumer for this function");
                Ok(Ok(SqsBatchResponse::default()))
            }
        };
        // A handler that failed or ran past its timeout fails the whole
        // batch, as Lambda's event source mapping does.
        match response {
            Ok(Ok(r)) => r
                .batch_item_failures
                .into_iter()
                .map(|f| f.item_identifier)
                .collect(),
            Ok(Err(_)) | Err(_) => ids,
        }
    }

    /// Deletes what was delivered; holds what failed until the delay its
    /// consumer set, else the queue's visibility timeout.
    async fn settle(
        &self,
        queue: &LocalQueue,
        function: &str,
        messages: &[aws_sdk_sqs::types::Message],
        failed: &[String],
        report: &mut DrainReport,
    ) -> Result<(), RunnerError> {
        let mut deletes = vec![];
        let mut rehold = vec![];
        for (i, m) in messages.iter().enumerate() {
            let id = m.message_id.clone().unwrap_or_default();
            let receipt = m.receipt_handle.clone().unwrap_or_default();
            if failed.contains(&id) {
                report.failed += 1;
                let asked = self
                    .delays
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&receipt);
                if asked.is_some() {
                    // The consumer set a real visibility timeout; the runner
                    // keeps the message until its own clock says so.
                    rehold.push(receipt.clone());
                }
                let delay_ms = asked.unwrap_or(queue.visibility_timeout * 1_000);
                let due_ms = self.now() + delay_ms;
                self.held
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Held {
                        queue_url: queue.url.clone(),
                        receipt,
                        due_ms,
                    });
            } else {
                report.delivered += 1;
                deletes.push(
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(receipt)
                        .build()
                        .map_err(sqs_err)?,
                );
            }
        }
        if !deletes.is_empty() {
            self.consumer_store(function)
                .sqs
                .delete_message_batch()
                .queue_url(&queue.url)
                .set_entries(Some(deletes))
                .send()
                .await
                .map_err(sqs_err)?;
        }
        // SQS counts 12 hours from the receive: half of it is left.
        self.set_visibility(&queue.url, &rehold, HELD_VISIBILITY_SECS / 2)
            .await
    }

    /// Makes held messages whose visibility timeout passed visible again.
    pub(super) async fn release_due(&self) -> Result<(), RunnerError> {
        let now = self.now();
        let due: Vec<Held> = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            let (due, keep) = held.drain(..).partition(|h| h.due_ms <= now);
            *held = keep;
            due
        };
        let mut by_queue: HashMap<String, Vec<String>> = HashMap::new();
        for h in due {
            by_queue.entry(h.queue_url).or_default().push(h.receipt);
        }
        for (queue_url, receipts) in by_queue {
            self.set_visibility(&queue_url, &receipts, 0).await?;
        }
        Ok(())
    }

    /// SQS's part, played with the operator's clients: `receipts` become
    /// visible after `secs`.
    async fn set_visibility(
        &self,
        queue_url: &str,
        receipts: &[String],
        secs: i32,
    ) -> Result<(), RunnerError> {
        for chunk in receipts.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, receipt)| {
                    ChangeMessageVisibilityBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(receipt)
                        .visibility_timeout(secs)
                        .build()
                        .map_err(sqs_err)
                })
                .collect::<Result<Vec<_>, _>>()?;
            self.stack
                .store
                .sqs
                .change_message_visibility_batch()
                .queue_url(queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(sqs_err)?;
        }
        Ok(())
    }

    /// Messages held back after a failure, not yet due.
    pub fn held_count(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or(0)
    }
}

/// The event Lambda hands an SQS consumer.
fn sqs_event(queue: &LocalQueue, messages: &[aws_sdk_sqs::types::Message]) -> SqsEvent {
    let mut event = SqsEvent::default();
    for m in messages {
        let mut record = SqsMessage::default();
        record.message_id = m.message_id.clone();
        record.receipt_handle = m.receipt_handle.clone();
        record.body = m.body.clone();
        record.event_source = Some("aws:sqs".into());
        record.event_source_arn = Some(queue.arn.clone());
        record.attributes = m
            .attributes
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
            .collect();
        event.records.push(record);
    }
    event
}
