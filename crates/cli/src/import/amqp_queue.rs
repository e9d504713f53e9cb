//! The AMQP source: a queue of JSON messages, taken with `basic.get` and manual acknowledgement in
//! batches of [`super::BATCH`]. A batch's messages are acknowledged (removed) only after
//! its operations committed, and only with purging; otherwise every message taken is returned to
//! the queue (`basic.nack` with requeue) when the import ends. A failure before the commit, or a
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
    let mut last_unacked: Option<u64> = None;
    let result: anyhow::Result<()> = async {
        while taken < total {
            let want = (total - taken).min(BATCH as u64);
            let mut bodies = Vec::with_capacity(want as usize);
            let mut last_tag = None;
            while (bodies.len() as u64) < want {
                let Some(m) = channel
                    .basic_get(name.clone(), BasicGetOptions { no_ack: false })
                    .await?
                else {
                    break;
                };
                last_tag = Some(m.delivery.delivery_tag);
                bodies.push(m.delivery.data);
            }
            let Some(last_tag) = last_tag else { break };
            // Until the ack, these are unacknowledged: a failure below requeues them.
            last_unacked = Some(last_tag);
            let mut batch = importer.commit(&bodies).await?;
            if purge {
                channel
                    .basic_ack(last_tag, BasicAckOptions { multiple: true })
                    .await?;
                last_unacked = None;
                batch.purged = bodies.len() as u64;
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
