"""The pure gossip rules: what may leave a node and to whom, why a lesson is (not)
shared, signing, fanout routing and anti-entropy sync. The durable outbox is the node's."""
