/*
 * Model 1, first half: enrollment to SNS (README.md says what is abstracted,
 * and where this half meets delivery.pml).
 *
 * The enrollment transaction (seat, enrollment and outbox row, all or
 * nothing); the stream handing each row to the relay at least once and
 * retrying a failed batch up to RETRIES tries, then giving up; the relay
 * publishing, then marking; the outbox sweeper republishing pending rows
 * under a lease that can lapse under a paused owner; the outbox TTL
 * removing published rows; crashes of the relay and the sweeper.
 *
 * A crash is chosen in the same atomic step as the action before it: a
 * process that crashes later, before its next step, does nothing in
 * between that others could see, so nothing is lost.
 *
 * Bounds (spin -DNAME=value): N students, CAP seats, CRASHES crashes in
 * all, RETRIES stream tries a row, PAUSES sweeper pauses past the lease. Mutations: -DMUT_... (README.md).
 */
#ifndef N
#define N 2
#endif
#ifndef CAP
#define CAP 2
#endif
#ifndef CRASHES
#define CRASHES 2
#endif
#ifndef RETRIES
#define RETRIES 2
#endif
#ifndef PAUSES
#define PAUSES 1
#endif
#if N != 2
#error "the pickers below are written for N == 2"
#endif

/* An outbox row: none, pending, published, removed by the TTL. */
#define NOROW     0
#define PENDING   1
#define PUBLISHED 2
#define GONE      3

byte seatsTaken;          /* the class's seats_taken */
bit committed[N];         /* the enrollment transaction committed */
bit decided[N];           /* the request ended, committed or not */
byte row[N];              /* the outbox row of enrollment i */
bit sent[N];              /* ghost: the event reached SNS */
byte crashes;             /* crashes so far, all processes together */

/* The sweeper's lease: 0 free, else its owner (1 or 2). */
byte lease;
bit lapsed[3];            /* the owner paused past its lease, which was freed */
byte working;             /* sweepers at work with a live lease */
byte pauses;

#define CAN_CRASH (crashes < CRASHES)

/* SNS accepted the event (delivery.pml takes it from there). */
#define PUBLISH(i) sent[i] = 1
/* Marking a pending row published; a no-op otherwise. */
#define MARK(i) if :: row[i] == PENDING -> row[i] = PUBLISHED :: else fi
/* Continue, or crash here (the caller says where it starts again). */
#define OR_CRASH(where) if :: skip :: CAN_CRASH -> crashes++; goto where fi

/* POST /classes/{id}/enrollments, then the stream and the relay for its
 * row, then the outbox TTL for it. */
proctype enrollment(byte i) {
	byte tries = 0;
	if
	:: atomic { seatsTaken < CAP -> seatsTaken++; committed[i] = 1; row[i] = PENDING; decided[i] = 1 }
	:: atomic { seatsTaken >= CAP -> decided[i] = 1 }       /* class_full */
	:: atomic { CAN_CRASH -> crashes++; decided[i] = 1 }    /* crash before the commit: nothing written */
	fi;
	assert(seatsTaken <= CAP);
	if
	:: !committed[i] -> goto end
	:: else
	fi;
try:
	if
	:: tries < RETRIES -> tries++
	:: else -> goto gaveup      /* the record goes to the failures queue */
	fi;
#ifdef MUT_MARK_BEFORE_PUBLISH
	atomic { MARK(i); OR_CRASH(try) };
	atomic { PUBLISH(i); OR_CRASH(try) };
#else
	atomic { PUBLISH(i); OR_CRASH(try) };
	atomic { MARK(i); OR_CRASH(try) };
#endif
gaveup:
	tries = 0;
end:
	/* The outbox TTL removes published rows only: an outbox row is never
	 * removed before it is published. */
	atomic { row[i] == PUBLISHED -> assert(sent[i]); row[i] = GONE }
}

/* Freeing the lease at the end of a run (or at its TTL after a crash). */
#define RELEASE(me) if :: !lapsed[me] -> working-- :: else fi; if :: lease == me -> lease = 0 :: else fi

/* The outbox sweeper: sweeper(1, 0) is the schedule, every minute for
 * ever; sweeper(2, 1) one invocation that overlaps it. */
proctype sweeper(byte me; bit once) {
	byte i;
end:
	do
	:: atomic {
		/* A run that finds nothing pending changes nothing: only runs
		 * with work are modelled. */
		(row[0] == PENDING || row[1] == PENDING) ->
#ifndef MUT_SWEEPER_NO_LEASE
		lease == 0 -> lease = me;
#endif
		lapsed[me] = 0; working++;
		/* The lease's promise: one sweeper works at a time. */
		assert(working <= 1)
	   };
	   /* Pending rows, in any order (their age is abstracted). StopBefore:
	    * no new row once the lease has lapsed. */
	   do
	   :: atomic {
		!lapsed[me] && (row[0] == PENDING || row[1] == PENDING) ->
		if :: row[0] == PENDING -> i = 0 :: row[1] == PENDING -> i = 1 fi;
		PUBLISH(i);
		OR_CRASH(crashed)
	      };
	      atomic { MARK(i); i = 0; OR_CRASH(crashed) }
	   :: else -> break
	   od;
	   atomic { RELEASE(me); if :: once -> goto out :: else fi }
	od;
crashed:
	atomic { i = 0; RELEASE(me); if :: once -> goto out :: else -> goto end fi };
out:
	skip
}

/* Time: a sweeper paused past its lease's TTL loses the lease without
 * knowing it, and the other may take it. */
proctype clock() {
end:
	do
	:: atomic { lease != 0 && pauses < PAUSES -> pauses++; lapsed[lease] = 1; working--; lease = 0 }
	od
}

init {
	atomic {
		run enrollment(0); run enrollment(1);
		run sweeper(1, 0); run sweeper(2, 1); run clock()
	}
}

/* Every committed enrollment's event is published and its row marked. */
#define DONE(i) (decided[i] && (!committed[i] || (row[i] != PENDING && sent[i])))
ltl published { <> [] (DONE(0) && DONE(1)) }
