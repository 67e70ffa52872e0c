// Package snsfix makes the engine's SNS answer as SNS does, or refuse,
// where the engine would do otherwise, for calls in the Query protocol:
//
//   - A filter policy (Subscribe, SetSubscriptionAttributes) is accepted
//     only if the engine evaluates it as SNS: on kumo exact strings, exists,
//     prefix and anything-but of strings, on message attributes; on moto
//     also numeric matching, suffix, equals-ignore-case, anything-but of
//     numbers or with prefix/suffix and FilterPolicyScope MessageBody. The
//     rest (and nested keys and $or on both) is refused with
//     InvalidParameter naming the feature and the local cloud (kumo
//     delivered nothing for them, or everything for a policy it could not
//     read), and counted; a policy SNS would refuse (not JSON, not an object
//     of arrays) is refused as SNS does.
//   - Subscribe to an endpoint the topic already has answers the existing
//     subscription's ARN when the attributes given are the same, and
//     InvalidParameter ("Subscription already exists with different
//     attributes") when not; kumo made a second subscription.
//   - With WithKumoDelivery: a Publish or PublishBatch carrying a Binary,
//     Number or String.Array message attribute is refused, named: kumo
//     delivers a Binary attribute empty in the envelope, cannot read a
//     Number one and filters a String.Array as one string. With WithMotoDelivery: one carrying a Binary attribute is
//     refused: moto drops such a message on its way to a raw-delivery queue.
//   - An error the engine answers in JSON (kumo, for an action it does not
//     know) reaches the Query client as the Query protocol's XML error.
package snsfix
