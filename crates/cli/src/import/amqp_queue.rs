//! The AMQP source: a queue of JSON messages, taken with `basic.get` and manual acknowledgement in
//! batches of [`super::BATCH`]. A batch's messages are acknowledged (removed) only after
//! its operations committed, and only with purging; otherwise every message taken is returned to
//! the queue (`basic.nack` with requeue) when the import ends. A conflicting message (its key
//! taken by another payload) is never acknowledged: it goes back to the queue at the end. A failure before the commit, or a
//! lost connection, returns the batch to the queue: the broker requeues unacknowledged messages.

use anyhow::Context as _;
use indicatif::ProgressBar;
use lapin::options::{BasicAckOptions, BasicGetOptions, BasicNackOptions, QueueDeclareOptions};
use lapin::types::{FieldTable, ShortString};
use lapin::{Connection, ConnectionProperties};

use super::{BATCH, Importer, Tally};

/// Imports the messages the queue holds when the import starts (the count `queue.declare`
/// reports), and acknowledges them with `purge`.
pub(crate) async fn import(
    url: &str,
    queue: &str,
    importer: &Importer,
    purge: bool,
    bar: &ProgressBar,
) -> anyhow::Result<Tally> {
    let shown = oprec::redact_url(url);
    let connection = Connection::connect(url, ConnectionProperties::default())
        .await
        .with_context(|| format!("cannot connect to AMQP at {shown}"))?;
    let channel = connection.create_channel().await?;
    let name = ShortString::from(queue);
    // Passive: the queue must exist, and is not created or changed.
    let declared = channel
        .queue_declare(
            name.clone(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .with_context(|| format!("the queue {queue:?} does not exist on {shown}"))?;
    let total = u64::from(declared.message_count());
    bar.set_length(total);

    let mut tally = Tally::default();
    let mut taken = 0u64;
    // The highest delivery tag not acknowledged: a `multiple` nack up to it returns every message
    // taken and not acknowledged (conflicts, or a batch that failed) to the queue.
    let mut last_unacked: Option<u64> = None;
    // With purging, the highest delivery tag of a conflict kept back so far.
    let mut held_back: Option<u64> = None;
    let result: anyhow::Result<()> = async {
        while taken < total {
            let want = (total - taken).min(BATCH as u64);
            let mut bodies = Vec::with_capacity(want as usize);
            let mut tags = Vec::with_capacity(want as usize);
            let mut last_tag = None;
            while (bodies.len() as u64) < want {
                let Some(m) = channel
                    .basic_get(name.clone(), BasicGetOptions { no_ack: false })
                    .await?
                else {
                    break;
                };
                last_tag = Some(m.delivery.delivery_tag);
                tags.push(m.delivery.delivery_tag);
                bodies.push(m.delivery.data);
            }
            let Some(last_tag) = last_tag else { break };
            // Until the ack, these are unacknowledged: a failure below requeues them.
            last_unacked = Some(last_tag);
            let committed = importer.commit(&bodies).await?;
            let mut batch = committed.tally;
            if purge {
                let conflicts = committed.conflicted.iter().filter(|&&c| c).count();
                if conflicts == 0 && held_back.is_none() {
                    channel
                        .basic_ack(last_tag, BasicAckOptions { multiple: true })
                        .await?;
                } else {
                    // One by one, leaving the conflicts (this batch's and earlier ones, which a
                    // `multiple` ack would take too) unacknowledged.
                    for (&tag, &conflict) in tags.iter().zip(&committed.conflicted) {
                        if conflict {
                            held_back = Some(tag);
                        } else {
                            channel
                                .basic_ack(tag, BasicAckOptions { multiple: false })
                                .await?;
                        }
                    }
                }
                last_unacked = held_back;
                batch.purged = (bodies.len() - conflicts) as u64;
            }
            taken += bodies.len() as u64;
            bar.inc(bodies.len() as u64);
            tally.add(&batch);
        }
        Ok(())
    }
    .await;
    // Whatever was taken and not acknowledged goes back to the queue.
    if let Some(tag) = last_unacked {
        channel
            .basic_nack(
                tag,
                BasicNackOptions {
                    multiple: true,
                    requeue: true,
                },
            )
            .await
            .context("returning the messages to the queue")?;
    }
    let _ = channel.close(200, "import done".into()).await;
    let _ = connection.close(200, "import done".into()).await;
    result.map(|()| tally)
}
