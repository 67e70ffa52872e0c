package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/localcloud"
)

// soakPoints are the fault points of the enrollment path; the soak arms
// every one of them.
var soakPoints = []fault.Point{
	fault.APIBeforeCommit, fault.APIAfterCommit,
	fault.RelayBeforePublish, fault.RelayAfterPublish, fault.RelayAfterMark,
	fault.ConsumerBeforeCommit, fault.ConsumerAfterCommit,
	fault.NotifierAfterSend,
}

// soakRate is how often every point fires, and soakMix how a firing splits
// between the actions. Crashes are the rarest share because a crash fails
// the whole batch a consumer holds (up to ten messages), not one message:
// docs/reliability.md works out what a larger share does to the DLQs.
const soakRate = 0.05

var soakMix = []struct {
	action fault.Action
	share  float64 // of soakRate
	delay  int     // ms
}{
	{fault.Crash, 0.1, 0},
	{fault.Fail, 0.6, 0},
	{fault.Delay, 0.3, 100},
}

// soakPlan arms every point at soakRate. Rules are tried in order, so each
// rule's probability is its share of what the rules before it left.
func soakPlan(seed uint64) fault.Plan {
	p := fault.Plan{Seed: seed}
	for _, pt := range soakPoints {
		left := 1.0
		for _, m := range soakMix {
			prob := soakRate * m.share / left
			left -= soakRate * m.share
			p.Rules = append(p.Rules, fault.Rule{Point: pt, Action: m.action, Probability: prob, DelayMS: m.delay})
		}
	}
	return p
}

// soakClassSize is the capacity of each soak class: every student finds a
// seat, so each answer must be 201.
const soakClassSize = 100

// soakClients is how many clients enroll at once.
const soakClients = 8

// Exercise 1's facts for many enrollments at once, with every fault point
// firing at random: crashes, errors and delays anywhere in the path. When
// the pipeline is quiet, every dead letter must carry a reason; the dead
// letters are then redriven (faults off), and every enrollment must have its
// intent, one count, one roster entry and one mail.
func TestSoak(t *testing.T) {
	n := *soakFlag
	if n <= 0 {
		t.Skip("soak disabled (-club.soak 0)")
	}
	report.setSoak(runSoak(t, "soak", n, nil))
}

// The soak with the adversary on (docs/local-cloud.md): AWS's documented
// misbehaviour at the aws profile's rates instead of the soak's faults, and
// the same facts, exactly. make test runs it small (-club.adversary-soak,
// 100 enrollments); under make test-adversary the suite's own adversary
// stays as it is.
func TestSoakUnderTheAdversary(t *testing.T) {
	if !stack.cloud.Adversary().On {
		control(t, http.MethodPut, stack.file.Endpoint+"/_club/adversary",
			map[string]any{"spec": "aws", "seed": stack.seed}, nil)
		t.Cleanup(func() { control(t, http.MethodDelete, stack.file.Endpoint+"/_club/adversary", nil, nil) })
	}
	res := runSoak(t, "soak-adversary", *adversarySoakFlag, nil)
	for _, b := range adversaryBehaviours(res.adversary) {
		t.Logf("adversary %s: %d", b, res.adversary.Counts[b])
	}
	report.setSoak(res)
}

// runSoak enrolls n students with every fault point armed and checks the
// facts once the pipeline is quiet. name keeps the students and keys of
// one soak apart from another's in the same run. during, if not nil, runs
// on the test's goroutine while the clients enroll (the mixed soak's
// purchases and mail outage); the pipeline must be quiet after it returns.
func runSoak(t *testing.T, name string, n int, during func(t *testing.T)) soakResult {
	quiet(t, 2*time.Minute)
	rng := rand.New(rand.NewPCG(stack.seed, uint64(n)))

	// Classes, students and the order they enroll in come from the seed.
	type job struct {
		student user
		class   int
		key     string
	}
	classes := make([]string, (n+soakClassSize-1)/soakClassSize)
	teachers := make([]user, len(classes))
	for i := range classes {
		classes[i], teachers[i] = newClass(t, soakClassSize)
	}
	jobs := make([]job, n)
	for i := range jobs {
		u, err := newUser("student", fmt.Sprintf("%s-%x-%d", name, stack.seed&0xffffffff, i))
		require.NoError(t, err)
		jobs[i] = job{student: u, class: i / soakClassSize, key: fmt.Sprintf("%s-%x-%d", name, stack.seed, i)}
	}
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })

	// With the adversary on, it is the run's misbehaviour: the fault points
	// only count their passes. Both at once compound (a consumer's crash
	// fails its whole batch, and the adversary invokes batches again), past
	// what either models.
	plan := soakPlan(stack.seed)
	if stack.cloud.Adversary().On {
		plan = fault.Plan{Seed: stack.seed}
	}
	armFaults(t, plan)
	start := time.Now()
	results := make([]enrollment, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range soakClients {
		wg.Go(func() {
			for i := range next {
				results[i], errs[i] = enroll(context.Background(), jobs[i].student, classes[jobs[i].class], jobs[i].key)
			}
		})
	}
	go func() {
		for i := range jobs {
			next <- i
		}
		close(next)
	}()
	var answered time.Duration
	allAnswered := make(chan struct{})
	go func() {
		wg.Wait()
		answered = time.Since(start)
		close(allAnswered)
	}()
	if during != nil {
		during(t)
	}
	<-allAnswered

	enrolled := make([][]string, len(classes))
	res := soakResult{seed: stack.seed, enrollments: n, classes: len(classes), answered: answered,
		classIDs: classes, teachers: teachers, enrolled: enrolled}
	for i, e := range results {
		require.NoError(t, errs[i], "seed %d", stack.seed)
		require.Equal(t, http.StatusCreated, e.status, "seed %d: %s", stack.seed, e.raw)
		enrolled[jobs[i].class] = append(enrolled[jobs[i].class], jobs[i].student.sub)
		res.failedAnswers += len(e.answers)
		if e.replayed {
			res.replayed++
		}
	}

	quiet(t, 10*time.Minute)
	res.settled = time.Since(start)
	st := faults(t)
	control(t, http.MethodDelete, stack.file.Endpoint+"/_club/faults", nil, nil)
	res.fired = firedByPoint(st)
	res.passes = passesByPoint(st)
	for i, c := range consumers {
		res.deliveries[i] = int(st.PassCount(fault.ConsumerBeforeCommit, function(t, c.function)))
	}

	// Nothing is left parked: whatever an instance parked during a mail
	// outage, a prober (the mail that probes for its breaker) comes back
	// after it and releases it (docs/architecture.md, "Waiting out a mail
	// outage"). Quiet above waited for the queues to empty.
	res.parkedLeft = queueDepth(t, "NotificationsParkingQueue")
	require.Zero(t, res.parkedLeft, "seed %d: owed mail left in the notifications' parking queue once quiet", stack.seed)

	// No message outside a DLQ (quiet above); every dead letter has a
	// reason. Then the operator's move: redrive, and let it settle.
	res.deadLetters = deadLetters(t)
	for _, d := range res.deadLetters {
		require.NotEmpty(t, d.reason, "seed %d: a dead letter in %s without a reason: %s", stack.seed, d.queue, d.body)
	}
	if redriven := redrive(t, res.deadLetters); redriven > 0 {
		res.redriven = redriven
		quiet(t, 5*time.Minute)
	}

	ens, intents, mail := enrollmentsByClass(t), intentsByClass(t), mailCounts(t)
	var broken []string
	for i, c := range classes {
		broken = append(broken, readFacts(t, teachers[i], c, ens, intents, mail).check(enrolled[i])...)
	}
	require.Empty(t, broken, "seed %d: the facts", stack.seed)
	for _, q := range deadLetterQueues {
		require.Zero(t, queueDepth(t, q), "seed %d: %s after the redrive", stack.seed, q)
	}
	t.Logf("soak: %d enrollments, answered in %s, settled in %s; faults fired %v; dead letters %d (redriven %d)",
		n, answered.Round(time.Second), res.settled.Round(time.Second), res.fired, len(res.deadLetters), res.redriven)
	res.adversary = stack.cloud.Adversary()
	return res
}

// soakResult is what a soak observed, for the report.
type soakResult struct {
	seed                 uint64
	enrollments, classes int
	answered, settled    time.Duration
	failedAnswers        int // 5xx or no answer, each repeated by the client
	replayed             int // answers replayed from the idempotency record
	fired                map[fault.Point]map[fault.Action]int
	passes               map[fault.Point]int64
	deliveries           [3]int
	deadLetters          []deadLetter
	redriven             int
	// parkedLeft is the mail left in the notifications' parking queue once
	// the pipeline was quiet (the soak requires none).
	parkedLeft int
	// adversary is what the adversary did during the run (when on).
	adversary localcloud.AdversaryStats
	// The soak's classes, their teachers and the students answered 201 in
	// each, for the checks that follow a soak (the mixed soak's exports).
	classIDs []string
	teachers []user
	enrolled [][]string
}

func firedByPoint(st fault.State) map[fault.Point]map[fault.Action]int {
	out := map[fault.Point]map[fault.Action]int{}
	for i, r := range st.Rules {
		if out[r.Point] == nil {
			out[r.Point] = map[fault.Action]int{}
		}
		out[r.Point][st.Rules[i].Action] += int(r.Fired)
	}
	return out
}

func passesByPoint(st fault.State) map[fault.Point]int64 {
	out := map[fault.Point]int64{}
	for p := range st.Passes {
		out[p] = st.PassCount(p, "")
	}
	return out
}

// deadLetter is a message in a dead-letter queue.
type deadLetter struct {
	queue, code, reason, body string
	receipt                   string
	attrs                     map[string]sqstypes.MessageAttributeValue
}

// deadLetters reads every message of the dead-letter queues and its reason:
// the consumers' dlq_code and dlq_reason attributes, or the relay's failure
// record (the condition and the function error).
func deadLetters(t *testing.T) []deadLetter {
	t.Helper()
	var out []deadLetter
	for _, q := range deadLetterQueues {
		seen := map[string]bool{}
		for {
			got, err := stack.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(stack.file.Queues[q]), MaxNumberOfMessages: 10, VisibilityTimeout: 60,
				MessageAttributeNames: []string{"All"},
			})
			require.NoError(t, err)
			if len(got.Messages) == 0 {
				break
			}
			for _, m := range got.Messages {
				if seen[aws.ToString(m.MessageId)] {
					continue
				}
				seen[aws.ToString(m.MessageId)] = true
				d := deadLetter{queue: q, body: aws.ToString(m.Body), receipt: aws.ToString(m.ReceiptHandle), attrs: m.MessageAttributes}
				if q == "RelayFailuresQueue" {
					d.code, d.reason = relayFailureReason(d.body)
				} else {
					d.code, d.reason = attr(m, "dlq_code"), attr(m, "dlq_reason")
				}
				out = append(out, d)
			}
		}
	}
	return out
}

func attr(m sqstypes.Message, name string) string {
	if v, ok := m.MessageAttributes[name]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

// relayFailureReason reads the on-failure record of the outbox stream
// mapping: why Lambda gave up on the batch.
func relayFailureReason(body string) (code, reason string) {
	var rec struct {
		RequestContext struct {
			Condition string `json:"condition"`
		} `json:"requestContext"`
		ResponseContext struct {
			FunctionError string `json:"functionError"`
		} `json:"responseContext"`
	}
	if json.Unmarshal([]byte(body), &rec) != nil {
		return "", ""
	}
	return rec.RequestContext.Condition, strings.TrimSpace(rec.RequestContext.Condition + " " + rec.ResponseContext.FunctionError)
}

// redrive sends the consumers' dead letters back to the queue they came
// from with the operator's tool, `clubctl dlq redrive`, as the DLQ runbook
// does, and returns how many it moved. Relay failures need no redrive:
// their rows stayed pending and the sweeper published them (quiet checks
// that none is pending).
func redrive(t *testing.T, letters []deadLetter) int {
	t.Helper()
	byQueue := map[string]int{}
	for _, d := range letters {
		url := aws.String(stack.file.Queues[d.queue])
		if d.queue == "RelayFailuresQueue" {
			_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: aws.String(d.receipt)})
			require.NoError(t, err)
			continue
		}
		require.NotEmpty(t, attrValue(d.attrs, "source_queue"), "dead letter without source_queue in %s", d.queue)
		// Reading them hid them: visible again for the redrive.
		_, err := stack.sqs.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: aws.String(d.receipt), VisibilityTimeout: 0})
		require.NoError(t, err)
		byQueue[d.queue]++
	}
	n := 0
	for _, q := range slices.Sorted(maps.Keys(byQueue)) {
		// SQS delivers at least once: a letter whose delete from the DLQ
		// is the copy that survives (the adversary's sqs.redeliver) is
		// received and moved again; the consumers' inboxes absorb it. Only
		// that many extra moves are allowed (none with the adversary off).
		redeliveredBefore := stack.cloud.Adversary().Counts["sqs.redeliver"]
		code, stdout, stderr := runClubctl(t, "dlq", "redrive", "--queue", q, "--rate", "0", "--json")
		require.Equal(t, 0, code, "clubctl dlq redrive --queue %s: %s", q, stderr)
		var out struct {
			Moved   int  `json:"moved"`
			Drained bool `json:"drained"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
		deliveredAgain := int(stack.cloud.Adversary().Counts["sqs.redeliver"] - redeliveredBefore)
		require.GreaterOrEqual(t, out.Moved, byQueue[q], "every dead letter of %s moved", q)
		require.LessOrEqual(t, out.Moved, byQueue[q]+deliveredAgain, "every dead letter of %s moved once, but for SQS delivering again", q)
		require.True(t, out.Drained)
		n += out.Moved
	}
	return n
}

func attrValue(attrs map[string]sqstypes.MessageAttributeValue, name string) string {
	if v, ok := attrs[name]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

// deadLetterSummary words the dead letters by queue and code.
func deadLetterSummary(letters []deadLetter) string {
	if len(letters) == 0 {
		return "none"
	}
	count := map[string]int{}
	for _, d := range letters {
		count[d.queue+": "+d.code]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, count[k]))
	}
	return strings.Join(parts, "; ")
}
