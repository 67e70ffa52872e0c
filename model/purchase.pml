/*
 * Model 2: the purchase saga (README.md says what is abstracted).
 *
 * The seat hold; the payment request with unknown results and the cutoff;
 * the wait for the webhook until the hold deadline, then asking the
 * provider; grant, or a refund when access cannot be granted; webhooks
 * duplicated, late and out of order; expiry; a late payment recording its
 * refund intent and a refund.requested outbox row; the relay and the
 * sweeper racing to start the refund execution from that row; refunds
 * under a key per attempt (refund-<id>-<n>, recorded before the call),
 * failed or unknown, the provider refusing a second live refund of one
 * payment; a failed or unsettled refund handed to a person; two people
 * running `clubctl reconcile resolve` on the same purchase, racing all of
 * the above.
 *
 * Every status change goes through MOVE, which asserts that the domain's
 * table allows it and applies the table's seat effect: the table is the
 * block between the TRANSITIONS markers, which model_test.go compares with
 * internal/club/purchase's own table.
 *
 * Bounds (spin -DNAME=value): N purchases with their saga, RIVALS other
 * students who only hold and then take or release a seat, CAP seats, UNKNOWNS
 * provider answers lost, GRANTFAILS grants refused, REFUNDFAILS refunds
 * failed, DUPS duplicate webhooks, ACTS decisions by people; K - 1 refund
 * attempts a purchase at most (asserted). Mutations: -DMUT_... (README.md).
 */
#ifndef N
#define N 1
#endif
#ifndef RIVALS
#define RIVALS 1
#endif
#ifndef CAP
#define CAP 1
#endif
#ifndef UNKNOWNS
#define UNKNOWNS 2
#endif
#ifndef GRANTFAILS
#define GRANTFAILS 1
#endif
#ifndef REFUNDFAILS
#define REFUNDFAILS 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef ACTS
#define ACTS 2
#endif
#ifndef K
#define K 5
#endif

/* BEGIN STATUSES: the domain's statuses (purchase.Statuses), and NONE for
 * a purchase not created (the intensive was full). */
mtype = { NONE, RESERVED, AWAITING_PROVIDER, PAYMENT_PENDING, CHECKING_PAYMENT, CONFIRMED,
          EXPIRED, REFUND_PENDING, REFUNDED, NEEDS_RECONCILIATION };
/* END STATUSES */
#define NS 11                      /* mtype values are 1..10 */

/* Seat effects (purchase.SeatEffect). */
#define UNCHANGED 0
#define RELEASED  1
#define TAKEN     2

hidden byte can[NS * NS];
hidden byte eff[NS * NS];
#define EDGE(f, t, e) can[(f) * NS + (t)] = 1; eff[(f) * NS + (t)] = e

inline transitions() {
	/* BEGIN TRANSITIONS: purchase's transitions table, edge by edge. */
	EDGE(RESERVED, PAYMENT_PENDING, UNCHANGED);
	EDGE(RESERVED, EXPIRED, RELEASED);
	EDGE(RESERVED, NEEDS_RECONCILIATION, UNCHANGED);
	EDGE(RESERVED, AWAITING_PROVIDER, UNCHANGED);
	EDGE(AWAITING_PROVIDER, PAYMENT_PENDING, UNCHANGED);
	EDGE(AWAITING_PROVIDER, EXPIRED, RELEASED);
	EDGE(AWAITING_PROVIDER, NEEDS_RECONCILIATION, UNCHANGED);
	EDGE(AWAITING_PROVIDER, CONFIRMED, TAKEN);
	EDGE(AWAITING_PROVIDER, REFUND_PENDING, RELEASED);
	EDGE(PAYMENT_PENDING, CONFIRMED, TAKEN);
	EDGE(PAYMENT_PENDING, CHECKING_PAYMENT, UNCHANGED);
	EDGE(PAYMENT_PENDING, EXPIRED, RELEASED);
	EDGE(PAYMENT_PENDING, REFUND_PENDING, RELEASED);
	EDGE(PAYMENT_PENDING, NEEDS_RECONCILIATION, UNCHANGED);
	EDGE(CHECKING_PAYMENT, CONFIRMED, TAKEN);
	EDGE(CHECKING_PAYMENT, EXPIRED, RELEASED);
	EDGE(CHECKING_PAYMENT, REFUND_PENDING, RELEASED);
	EDGE(CHECKING_PAYMENT, NEEDS_RECONCILIATION, UNCHANGED);
	EDGE(EXPIRED, REFUND_PENDING, UNCHANGED);
	EDGE(REFUND_PENDING, REFUNDED, UNCHANGED);
	EDGE(REFUND_PENDING, NEEDS_RECONCILIATION, UNCHANGED);
	EDGE(NEEDS_RECONCILIATION, REFUNDED, UNCHANGED);
	EDGE(NEEDS_RECONCILIATION, CONFIRMED, TAKEN);
	EDGE(NEEDS_RECONCILIATION, EXPIRED, RELEASED);
	EDGE(NEEDS_RECONCILIATION, REFUND_PENDING, RELEASED);
	/* END TRANSITIONS */
}

/* The intensive's seat pools. */
byte free = CAP, held, taken;

mtype st[N] = NONE;             /* the purchase's status */
bit holds[N];              /* it holds a seat (purchase.HoldsSeat) */
bit owns[N];               /* it took a seat: access granted */

/* Time, per purchase: before the cutoff (hold - hold/10), past it, past
 * the hold deadline. Advanced by clock() at any moment. */
#define BEFORE_CUTOFF 0
#define PAST_CUTOFF   1
#define PAST_DEADLINE 2
byte clk[N];

/* The provider's payment (key pay-<id>: one per purchase). */
#define P_NONE      0
#define P_PENDING   1
#define P_SUCCEEDED 2
#define P_FAILED    3
byte pay[N];
bit shown[N];              /* the checkout URL was recorded and shown */
byte obs[N];               /* the payment status recorded on the purchase (P_*) */

/* The provider's refunds: refund[p*K + key] (R_*). */
#define R_NONE      0
#define R_PENDING   1
#define R_SUCCEEDED 2
#define R_FAILED    3
byte refund[N * K];
#define RF(p, k) refund[(p) * K + (k)]
byte attempts[N];          /* refund intents recorded (purchase.RefundAttempt) */
bit row[N * K];            /* a pending refund.requested outbox row for attempt n */
bit started[N * K];        /* the refund execution <id>-refund-<n> exists */

/* Webhooks waiting for delivery, in any order. */
bit whPay[N], whRefund[N];

/* Ghosts: money, and the faults spent. */
byte charged[N], refunded[N];
byte unknowns, grantFails, refundFails, dups, acts;

/* A refund of p's payment that is pending or succeeded (the provider then
 * refuses a new one: already_refunded); one that succeeded. */
#define IS_LIVE(p, k) (RF(p, k) == R_PENDING || RF(p, k) == R_SUCCEEDED)
#define LIVE(p) (IS_LIVE(p, 1) || IS_LIVE(p, 2) || IS_LIVE(p, 3) || IS_LIVE(p, 4))
#define DONE_REFUND(p) (RF(p, 1) == R_SUCCEEDED || RF(p, 2) == R_SUCCEEDED || RF(p, 3) == R_SUCCEEDED || RF(p, 4) == R_SUCCEEDED)
#define ANY_PENDING(p) (RF(p, 1) == R_PENDING || RF(p, 2) == R_PENDING || RF(p, 3) == R_PENDING || RF(p, 4) == R_PENDING)
#if K != 5
#error "LIVE, DONE_REFUND and the pickers are written for K == 5 (attempts 1 to 4)"
#endif

/* Every status change: allowed by the domain's table, with the table's
 * seat effect (out of needs_reconciliation a purchase releases only the
 * seat it still holds, and cannot take one it does not: SeatEffectBetween). */
inline MOVE(p, to) {
	assert(can[st[p] * NS + to]);
	if
	:: eff[st[p] * NS + to] == RELEASED && holds[p] -> holds[p] = 0; held--; free++
	:: eff[st[p] * NS + to] == TAKEN -> assert(holds[p]); holds[p] = 0; held--; owns[p] = 1; taken++
	:: else
	fi;
	st[p] = to
}

/* refund_pending with a refund intent: attempt n, and its outbox row when
 * no execution of this purchase runs to carry it (late payment, person). */
inline BEGIN_REFUND(p, withRow) {
	MOVE(p, REFUND_PENDING);
	assert(attempts[p] < K - 1);      /* the bound K is big enough */
	attempts[p]++;
	if :: withRow -> row[(p) * K + attempts[p]] = 1 :: else fi
}

/* The key of refund attempt n: refund-<id>-<n>, recorded before the call. */
#ifndef MUT_REFUND_KEY_REUSED
#define KEY(n) (n)
#else
#define KEY(n) 1                     /* refund-<id> for every attempt */
#endif

/* The refund execution for attempt n (the saga's own refund branch, or
 * <id>-refund-<n> started from a refund.requested row). */
proctype refunder(byte p; byte n) {
	byte k = KEY(n);
	bit asked;
call:
	atomic {
		if :: st[p] != REFUND_PENDING -> goto end :: else fi;   /* moved on: stale */
		/* POST /v1/refunds, Idempotency-Key refund-<id>-<n>. An attempt's
		 * first call never gets an earlier attempt's failed refund back:
		 * a retry after a failed refund can succeed. */
		assert(asked || RF(p, k) != R_FAILED);
		asked = 1;
		if
		:: RF(p, k) != R_NONE -> skip               /* a replay of this key's refund */
		:: RF(p, k) == R_NONE && (pay[p] != P_SUCCEEDED || LIVE(p)) ->
			/* RefundRejected: payment_not_succeeded, or already_refunded
			 * (another refund of the payment is live): a person decides. */
			MOVE(p, NEEDS_RECONCILIATION); goto end
		:: else -> RF(p, k) = R_PENDING
		fi;
		if
		:: skip
		:: unknowns < UNKNOWNS -> unknowns++; goto call     /* no answer: the same key again */
		fi
	};
check:
	atomic {
		if :: st[p] != REFUND_PENDING -> goto end :: else fi;
		if
		:: DONE_REFUND(p) -> MOVE(p, REFUNDED); goto end
		:: !DONE_REFUND(p) && RF(p, k) == R_FAILED -> MOVE(p, NEEDS_RECONCILIATION); goto end   /* RefundFailed: a person acts */
		:: else                                                               /* pending */
		fi
	};
	/* Poll until it settles, or give up at the bound: a person owns it. */
	atomic {
		if
		:: st[p] != REFUND_PENDING || RF(p, k) != R_PENDING -> goto check
		:: unknowns < UNKNOWNS && st[p] == REFUND_PENDING -> unknowns++; MOVE(p, NEEDS_RECONCILIATION)
		fi
	};
end:
	skip
}

/* Expire unless a succeeded payment was recorded (then the money came
 * while the seat was held, and the saga grants instead: Expire refuses with
 * PaymentSucceeded). */
#define EXPIRE_OR_GRANT(p) if :: obs[p] == P_SUCCEEDED -> goto grant :: else -> MOVE(p, EXPIRED); goto end fi

/* POST /intensives/{id}/purchases, then the saga's execution, started by
 * the relay or the sweeper from purchase.requested under the purchase's
 * name (a second start is ExecutionAlreadyExists: one execution), at any
 * time, the hold deadline passed included. Each step is one conditional
 * write from the status it expects; finding another is StaleStep. */
proctype saga(byte p) {
	if
	:: atomic { free > 0 -> free--; held++; holds[p] = 1; st[p] = RESERVED }
	:: atomic { free == 0 -> goto end }          /* intensive_full */
	fi;
request:
	atomic {
		if :: st[p] != RESERVED && st[p] != AWAITING_PROVIDER -> goto end :: else fi;
		/* The cutoff: no payment request past hold_expires_at - hold/10. */
#ifndef MUT_NO_CUTOFF
		if :: clk[p] >= PAST_CUTOFF -> EXPIRE_OR_GRANT(p) :: else fi;
#else
		if :: clk[p] >= PAST_DEADLINE -> EXPIRE_OR_GRANT(p) :: else fi;
#endif
		/* POST /v1/payments, Idempotency-Key pay-<id>. */
		assert(clk[p] == BEFORE_CUTOFF);       /* never a payment request past the cutoff */
		if :: pay[p] == P_NONE -> pay[p] = P_PENDING :: else fi;
		if
		:: MOVE(p, PAYMENT_PENDING); shown[p] = 1
		:: unknowns < UNKNOWNS -> unknowns++;      /* no answer: awaiting_provider, the same key again */
			if :: st[p] == RESERVED -> MOVE(p, AWAITING_PROVIDER) :: else fi;
			goto request
		fi
	};
	/* Wait for the webhook (the task token), at most until the deadline. */
	atomic {
		if
		:: obs[p] == P_SUCCEEDED -> goto grant
		:: obs[p] == P_FAILED -> if :: st[p] == PAYMENT_PENDING -> MOVE(p, EXPIRED) :: else fi; goto end
		:: obs[p] == P_NONE && clk[p] == PAST_DEADLINE ->
			if :: st[p] == PAYMENT_PENDING -> MOVE(p, CHECKING_PAYMENT) :: else -> goto end fi
		fi
	};
check:
	atomic {
		if :: st[p] != CHECKING_PAYMENT -> goto end :: else fi;
		if
		:: pay[p] == P_SUCCEEDED -> obs[p] = P_SUCCEEDED; goto grant
		:: pay[p] != P_SUCCEEDED ->                       /* pending or failed */
			if :: pay[p] == P_FAILED && obs[p] == P_NONE -> obs[p] = P_FAILED :: else fi;
			EXPIRE_OR_GRANT(p)
		:: unknowns < UNKNOWNS -> unknowns++;
			if
			:: goto check                                 /* ask again */
			:: MOVE(p, NEEDS_RECONCILIATION); goto end    /* the bound: a person decides, the hold kept */
			fi
		fi
	};
grant:
	atomic {
		if :: st[p] != PAYMENT_PENDING && st[p] != CHECKING_PAYMENT && st[p] != AWAITING_PROVIDER -> goto end :: else fi;
		assert(obs[p] == P_SUCCEEDED);
		if
		:: MOVE(p, CONFIRMED); goto end
		:: grantFails < GRANTFAILS -> grantFails++;       /* GrantFailed: the refund branch */
			BEGIN_REFUND(p, 0)
		fi
	};
	run refunder(p, attempts[p]);
end:
	skip
}

/* The provider and the student: the student pays (or the payment fails)
 * once shown the checkout URL, at any time, after the deadline included;
 * refunds settle, succeeded or failed. Each sends its webhook. */
proctype provider(byte p) {
	byte k;
end:
	do
	:: atomic { pay[p] == P_PENDING && shown[p] -> pay[p] = P_SUCCEEDED; charged[p]++; whPay[p] = 1 }
	:: atomic { pay[p] == P_PENDING && shown[p] -> pay[p] = P_FAILED; whPay[p] = 1 }
	:: atomic {
		ANY_PENDING(p) ->
		if :: RF(p, 1) == R_PENDING -> k = 1 :: RF(p, 2) == R_PENDING -> k = 2
		   :: RF(p, 3) == R_PENDING -> k = 3 :: RF(p, 4) == R_PENDING -> k = 4 fi;
		if
		:: RF(p, k) = R_SUCCEEDED; refunded[p]++
		:: refundFails < REFUNDFAILS -> refundFails++; RF(p, k) = R_FAILED
		fi;
		whRefund[p] = 1; k = 0
	   }
	od
}

/* POST /webhooks/payments: in any order, each possibly twice. */
proctype webhooks(byte p) {
end:
	do
	:: atomic {
		whPay[p] -> if :: whPay[p] = 0 :: dups < DUPS -> dups++ fi;
		/* record the final status (a final status never reverts) */
		if :: obs[p] == P_NONE -> obs[p] = pay[p] :: else fi;
		/* a late payment: the refund intent and its outbox row, one write */
#ifndef MUT_LATE_PAYMENT_WITHOUT_ROW
		if :: st[p] == EXPIRED && obs[p] == P_SUCCEEDED -> BEGIN_REFUND(p, 1) :: else fi
#else
		if :: st[p] == EXPIRED && obs[p] == P_SUCCEEDED -> BEGIN_REFUND(p, 0) :: else fi
#endif
	   }
	:: atomic {
		whRefund[p] -> if :: whRefund[p] = 0 :: dups < DUPS -> dups++ fi;
		if
		:: DONE_REFUND(p) && (st[p] == REFUND_PENDING || st[p] == NEEDS_RECONCILIATION) -> MOVE(p, REFUNDED)
		:: else
		fi
	   }
	od
}

/* The relay and the sweeper (two of these) start <id>-refund-<n> from a
 * pending refund.requested row, then mark it; a second start of one name
 * is ExecutionAlreadyExists, a success. */
proctype starter(byte p) {
	byte n;
end:
	do
	:: atomic {
		(row[p*K+1] || row[p*K+2] || row[p*K+3] || row[p*K+4]) ->
		if :: row[p*K+1] -> n = 1 :: row[p*K+2] -> n = 2 :: row[p*K+3] -> n = 3 :: row[p*K+4] -> n = 4 fi;
#ifndef MUT_REFUND_EXEC_NAME_REUSED
		if :: !started[p*K+n] -> started[p*K+n] = 1; run refunder(p, n) :: else fi
#else
		if :: !started[p*K+1] -> started[p*K+1] = 1; run refunder(p, n) :: else fi   /* always <id>-refund */
#endif
	   };
	   atomic { row[p*K+n] = 0; n = 0 }
	od
}

/* A person: clubctl reconcile resolve. Reads the purchase, decides from
 * what it says (no --force), and writes. */
proctype person() {
	byte p; mtype action; bit h; byte o; bit s;
end:
	do
	:: atomic {
		acts < ACTS && (st[0] == NEEDS_RECONCILIATION || N > 1 && st[N-1] == NEEDS_RECONCILIATION) ->
		if :: st[0] == NEEDS_RECONCILIATION -> p = 0 :: N > 1 && st[N-1] == NEEDS_RECONCILIATION -> p = N - 1 fi;
		h = holds[p]; o = obs[p]; s = shown[p];
		/* What the person may decide without --force (Purchase.Resolve). */
		if
		:: o == P_SUCCEEDED && h -> action = CONFIRMED
		:: o != P_SUCCEEDED -> action = EXPIRED                 /* release */
		:: s && o != P_FAILED -> action = REFUND_PENDING        /* refund */
		fi
	   };
	   atomic {
#ifndef MUT_RESOLVE_UNCONDITIONAL
		/* One conditional write: still needs_reconciliation, as read. */
		if
		:: st[p] == NEEDS_RECONCILIATION && holds[p] == h && obs[p] == o ->
#else
		if
		:: true ->
#endif
			acts++;
			if
			:: action == REFUND_PENDING -> BEGIN_REFUND(p, 1)
			:: else -> MOVE(p, action)
			fi
		:: else                                                 /* it moved on: refused */
		fi;
		p = 0; action = NONE; h = 0; o = 0; s = 0
	   }
	od
}

/* The other student (RIVALS of them): their purchase is abstracted to its
 * seat effects, a hold when a seat is free, then the seat taken or
 * released; it races the saga's purchase for the seat. */
bit rivalHolds, rivalOwns;
proctype rival() {
	if
	:: atomic { free > 0 -> free--; held++; rivalHolds = 1 }
	:: atomic { free == 0 -> goto end }          /* intensive_full */
	fi;
	if
	:: atomic { rivalHolds = 0; held--; rivalOwns = 1; taken++ }
	:: atomic { rivalHolds = 0; held--; free++ }
	fi;
end:
	skip
}

/* Time goes on. */
proctype clock(byte p) {
end:
	do
	:: atomic { st[p] != NONE && clk[p] < PAST_DEADLINE -> clk[p]++ }   /* from the purchase's creation */
	od
}

/* The invariants that hold in every state. */
#define SEATS (free + held + taken == CAP && held + taken <= CAP && \
	held == holds[0] + (N > 1 -> holds[N-1] : 0) + rivalHolds && \
	taken == owns[0] + (N > 1 -> owns[N-1] : 0) + rivalOwns)
#define MONEY(p) (refunded[p] <= 1 && refunded[p] <= charged[p] && charged[p] <= 1 && \
	!(st[p] == CONFIRMED && refunded[p] > 0))

active proctype invariants() {
end:
	atomic { !(SEATS && MONEY(0) && MONEY(N-1)) -> assert(false) }
}

/* Once everything is quiet: each purchase is terminal or names its owner
 * (a person, for needs_reconciliation), and its money adds up. */
#define OWNED(p) (st[p] == NONE || st[p] == CONFIRMED || st[p] == EXPIRED || st[p] == REFUNDED || st[p] == NEEDS_RECONCILIATION)
#define SETTLED(p) (\
	(st[p] != CONFIRMED || charged[p] - refunded[p] == 1) && \
	(st[p] != EXPIRED && st[p] != REFUNDED || charged[p] - refunded[p] == 0))
hidden byte ownerless, unsettled;
active proctype quiet() {
end:
	timeout ->
	ownerless = !(OWNED(0) && OWNED(N-1));
	assert(!ownerless);
	unsettled = !(SETTLED(0) && SETTLED(N-1));
	assert(!unsettled)
}

init {
	atomic {
		transitions();
		byte p = 0;
		do
		:: p < N -> run saga(p); run provider(p); run webhooks(p); run starter(p); run starter(p); run clock(p); p++
		:: else -> break
		od;
		p = 0;
		do
		:: p < RIVALS -> run rival(); p++
		:: else -> break
		od;
		run person(); run person()
	}
}

/* Every purchase comes to rest terminal, or with a person. */
ltl owned { <> [] (OWNED(0) && OWNED(N-1)) }
