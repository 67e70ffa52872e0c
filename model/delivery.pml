/*
 * Model 1, second half: SNS to mail (README.md says what is abstracted, and
 * where this half meets outbox.pml).
 *
 * What outbox.pml proves is this half's environment: every committed
 * enrollment's event is published at least once, and may be published
 * again (a crash between publish and mark, a retried stream batch, the
 * sweeper racing the relay), at any time and in any order. SNS fans each
 * publish out to the analytics and the notifications queues; SQS delivers
 * at least once and in any order; the analytics consumer applies its
 * effect in its inbox's transaction; the notifier calls the mail provider
 * with the key notify-<event_id> and writes the notification status;
 * crashes of the consumers and the notifier anywhere.
 *
 * A crash is chosen in the same atomic step as the action before it: a
 * process that crashes later, before its next step, does nothing in
 * between that others could see, so nothing is lost.
 *
 * Bounds (spin -DNAME=value): N events, PUBS publishes of each at most,
 * CRASHES crashes in all, DUPS extra SQS deliveries. Mutations: -DMUT_...
 * (README.md).
 */
#ifndef N
#define N 2
#endif
#ifndef PUBS
#define PUBS 2
#endif
#ifndef CRASHES
#define CRASHES 2
#endif
#ifndef DUPS
#define DUPS 1
#endif
#if N != 2
#error "the pickers below are written for N == 2"
#endif

/* The notification status on the enrollment. */
#define MAIL_NONE    0
#define MAIL_UNKNOWN 1
#define MAIL_SENT    2

byte pubs[N];             /* times event i was published */
byte crashes;             /* crashes so far, all processes together */
byte dups;                /* extra SQS deliveries so far */

/* SQS: event i waits in queue c (0 analytics, 1 notifications). A second
 * copy of a waiting message is not kept apart: it is that message
 * delivered again, which ACK models. */
bit q[2 * N];
#define Q(c, i) q[(c) * N + (i)]

bit inbox[N];             /* analytics inbox: event i seen */
byte effect[N];           /* ghost: analytics counter increments for event i */

byte mail[N];             /* notification status of enrollment i */
bit providerKey[N];       /* the mail provider holds notify-<event i> */
byte mails[N];            /* ghost: mails the provider sent for enrollment i */

#define CAN_CRASH (crashes < CRASHES)
#define OR_CRASH(where) if :: skip :: CAN_CRASH -> crashes++; goto where fi

/* The relay and the sweeper, as outbox.pml has them: event i is published
 * once, then up to PUBS-1 times more, whenever. */
proctype publisher(byte i) {
	do
	:: atomic { pubs[i] < PUBS -> pubs[i]++; Q(0, i) = 1; Q(1, i) = 1 }
	:: pubs[i] > 0 -> break
	od
}

#define PICK(c, i) if :: Q(c, 0) -> i = 0 :: Q(c, 1) -> i = 1 fi

/* Deleting the message after handling it, or a lost delete (or SQS's own
 * duplicate): then it is delivered again. */
#define ACK(c, i) if :: Q(c, i) = 0 :: dups < DUPS -> dups++ fi; i = 0

/* The analytics consumer: its effect and its inbox record in one
 * transaction. A crash before the delete delivers the message again. */
proctype analytics() {
	byte i;
end:
	do
#ifndef MUT_EFFECT_OUTSIDE_INBOX
	:: atomic {
		PICK(0, i);
		if :: !inbox[i] -> inbox[i] = 1; effect[i]++ :: else fi;
		assert(effect[i] <= 1);            /* each effect applied once */
		if :: skip :: CAN_CRASH -> crashes++; i = 0; goto end fi
	   };
#else
	:: atomic {
		PICK(0, i);
		if :: !inbox[i] -> effect[i]++ :: else -> goto ack fi;
		assert(effect[i] <= 1);
		if :: skip :: CAN_CRASH -> crashes++; i = 0; goto end fi
	   };
	   inbox[i] = 1;
ack:
#endif
	   atomic { ACK(0, i) }
	od
}

/* The notifier: the provider's key is notify-<event_id>. An answer that
 * does not come back leaves the status unknown, and the message is
 * delivered again. */
proctype notifier() {
	byte i;
end:
	do
	:: atomic {
		PICK(1, i);
		if
		:: mail[i] == MAIL_SENT -> goto ack      /* sent already: nothing to do */
		:: else
		fi;
#ifndef MUT_NOTIFY_KEY_PER_ATTEMPT
		if :: !providerKey[i] -> providerKey[i] = 1; mails[i]++ :: else fi;
#else
		mails[i]++;                              /* a new key every attempt */
#endif
		assert(mails[i] <= 1);                   /* the provider sent each mail once */
		if
		:: skip
		:: CAN_CRASH -> crashes++; i = 0; goto end          /* crash before the status write */
		:: CAN_CRASH -> crashes++; mail[i] = MAIL_UNKNOWN; i = 0; goto end   /* no answer */
		fi
	   };
	   atomic { mail[i] = MAIL_SENT; OR_CRASH(end) };
ack:
	   atomic { ACK(1, i) }
	od
}

init {
	atomic {
		run publisher(0); run publisher(1);
		run analytics(); run notifier()
	}
}

/* Every published event is counted once and mailed, and stays so. */
#define DONE(i) (pubs[i] > 0 && effect[i] == 1 && mail[i] == MAIL_SENT && mails[i] == 1)
ltl mailed { <> [] (DONE(0) && DONE(1)) }
