//! The [`AckToken::Tag`](oprec_core::AckToken::Tag) an AMQP delivery is acknowledged with.
//!
//! AMQP delivery tags count per channel from 1, so after a reconnect a new delivery can carry the
//! tag an old, already requeued one had. Acknowledging the old token must not acknowledge the new
//! delivery, so the token also carries the connection's generation (numbered process-wide, see
//! `transport.rs`): the top 16 bits are the generation, the low 48 bits the delivery tag (2^48
//! deliveries on one channel is out of reach).

/// The low bits that hold the delivery tag.
const TAG_BITS: u32 = 48;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// A delivery tag of one connection generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AckTag {
    /// Which connection (counting reconnects, wrapping) delivered it.
    pub(crate) generation: u16,
    /// The broker's delivery tag on that connection's consumer channel.
    pub(crate) delivery_tag: u64,
}

impl AckTag {
    /// The token handed to callers.
    pub(crate) fn to_token(self) -> u64 {
        (u64::from(self.generation) << TAG_BITS) | (self.delivery_tag & TAG_MASK)
    }

    /// Reads a token back.
    pub(crate) fn from_token(token: u64) -> Self {
        AckTag {
            generation: (token >> TAG_BITS) as u16,
            delivery_tag: token & TAG_MASK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_generations_apart() {
        for (generation, delivery_tag) in [(0, 1), (1, 1), (7, 123_456), (u16::MAX, TAG_MASK)] {
            let tag = AckTag {
                generation,
                delivery_tag,
            };
            assert_eq!(AckTag::from_token(tag.to_token()), tag);
        }
        let old = AckTag {
            generation: 1,
            delivery_tag: 5,
        };
        let new = AckTag {
            generation: 2,
            delivery_tag: 5,
        };
        assert_ne!(old.to_token(), new.to_token());
    }
}
