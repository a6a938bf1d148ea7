package verdict

// FirstLook is the fewest rounds a run measures before its first look: the
// first batch and its confirmation batch.
const FirstLook = 2 * ConfirmPairs

// Plan is the sequential rule: how many more rounds the run should
// measure, given the results so far, the rounds done and the cap. 0 means
// stop; called with no results and 0 rounds it gives the first batch
// (FirstLook rounds, or the cap if lower). Its looks come at FirstLook
// rounds and then every ConfirmPairs rounds: while any cell is undecided
// (which includes a change not yet confirmed by a batch of its own), it
// measures another ConfirmPairs rounds, never past maxRounds. Each look
// can turn an unchanged cell "slower" only if the earlier and the later
// half of its pairs (ConfirmBatch) both show it on their own, so the
// false alarms grow slowly with the number of looks; TestAAFalseAlarms
// measures the rate of the whole procedure (Decide at every look, Plan
// between them, Decide's verdict at the stop) at caps of 20, 30, 60 and 100
// rounds, and TestPower its power. o is not used yet: the rule's batch
// sizes do not depend on the thresholds.
func Plan(rs []Result, rounds, maxRounds int, o Options) int {
	left := maxRounds - rounds
	if left <= 0 {
		return 0
	}
	if rounds < FirstLook {
		return min(FirstLook-rounds, left)
	}
	for _, r := range rs {
		if r.Verdict == Undecided {
			return min(ConfirmPairs, left)
		}
	}
	return 0
}
