// Package lifecycle owns the local model processes behind lifecycle-managed targets: it starts a
// target's command on demand on a free loopback port, waits for its health check, keeps at most
// `slots` members of a group running (stopping the least recently used unpinned one to make room),
// restarts crashed processes with backoff, stops idle ones, and never lets a child outlive the
// gateway. It also remembers the LRU order in a state file so that a restart pre-warms the members
// that were in use.
//
// The server calls Ensure before an attempt on a managed target and the returned release when the
// attempt ends; Ready and State answer without blocking, for "fall through if another target can
// serve now" and for 503 + Retry-After on loading targets.
//
// Invariants, each with the test that holds it:
//   - A group never has more than its slots' worth of processes alive, and the one stopped to make
//     room is the least recently used idle unpinned member — TestEvictionOrderLRU; one loading
//     for nobody (a restart after a crash, a pre-warm, a launch whose requests have gone) counts
//     as idle — TestUnwantedRestartEvictable, TestUnaskedLoadsEvictable. A member
//     evicted for another counts in its slot again, until it has gone, when the one it was
//     evicted for is stopped before it launched (a Reload retired it) —
//     TestRetiredNewcomerGivesVictimSlotBack.
//   - A pinned member is never evicted — TestPinnedNeverEvicted.
//   - A member with a request in flight is neither evicted nor idle-stopped — TestBusyMemberNotEvicted,
//     TestIdleStop. One that crashed and whose idle_stop passes before its restart is due stays
//     stopped rather than load again only to be stopped — TestIdleCrashedMemberStaysStopped.
//   - A member that a request waits for is not evicted before that request has it, so two requests
//     for members of a full group never load and evict each other's processes in turn —
//     TestNoEvictionBeforeWaiterAcquires.
//   - Requests that find their group full get its slots in the order they first waited, one member
//     at a time, not in the order the scheduler wakes them — TestSlotWaitersServedInArrivalOrder;
//     a request that joined another's start keeps its place when that start ends at the other's
//     load_timeout — TestJoinedRequestKeepsPlaceInLine; and the line looks again whenever a
//     member's place in it changes — TestLineLooksAgainWhenPlaceChanges.
//   - Concurrent requests for one cold target start one process, and in a full group evict one
//     member — TestSingleStartUnderConcurrency, TestHerdOf64StartsOnce. What holds it is that a
//     start is reserved only from StateStopped, in the critical section that sets StateStarting
//     (for Warm, pinned starts and pre-warms as well); singleflight only has the requests share
//     one start flight, and both tests pass without it.
//   - A member that crashes after having been healthy is restarted with backoff, and the crash is
//     logged with its last stderr lines — TestRestartAfterCrash; an unpinned member whose restart
//     fails before it is healthy is stopped, not relaunched forever — TestUnpinnedRestartGivesUp.
//     From the moment its exit is seen, a crashed member is not handed out nor reported ready
//     (it shows stopping, then backoff): a request then waits for the restart rather than get the
//     dead URL while the group is reaped — TestCrashedMemberNotHandedOutDuringReap.
//   - A stop (eviction, idle_stop, load_timeout, Close) sends SIGTERM to the member's process
//     group and SIGKILL to what is left of it after the grace, and ends, freeing the slot, only
//     when no process of the group is left (a zombie nobody reaps does not count), so a model
//     server's workers get the grace too (their stderr stays open until then, so one that logs
//     on its way out is not killed by SIGPIPE) and the next member never starts beside them —
//     TestStopWaitsForGroup. After SIGKILL that wait is bounded (10 s, then an error is logged), for
//     a process stuck in the kernel. A crashed member's group is killed and waited for the same way
//     before it restarts. On Linux, descendants that left the group (setsid) are found through
//     their parents in /proc, before a stop and on every look during it, and stopped with it —
//     TestStopReachesEscapedWorker, TestStopReachesLateEscapee; one whose parent had already died
//     (a crashed process's own children, say) escapes.
//   - No child process (nor anything it spawned into its process group) survives Close —
//     TestNoOrphanAfterClose; nor, on Linux, the gateway's exit on a second signal, which calls
//     KillDescendants — TestSecondSignalKillsProcessGroups (cmd/gateway). A SIGKILL of the
//     gateway on Linux takes the child itself (Pdeathsig) — TestChildDiesWithGateway — but not
//     what it spawned.
//   - Once Drain is called (the gateway told to stop), no Ensure waits for a process: each gets
//     ErrStopping, and the processes loading or backing off are stopped at once, not after the
//     drain — TestDrainEndsWaitsAndStopsLoads, TestStopMidLoadStopsChildren (cmd/gateway); nor
//     does a pinned member that a Reload then adds start — TestReloadAfterDrainStartsNoPinned.
//   - A start that cannot finish within load_timeout fails with *LoadTimeoutError and its process is
//     killed — TestLoadTimeout.
//   - The most recently used members are pre-warmed from the state file — TestStateFilePrewarm.
//   - A background start (Warm) gives way to the starts requests wait for: no slot a request's
//     start waits for, no launch once one waits in its group's line, evictable once launched —
//     TestWarmGivesWayToRequests, TestWarmGivesWayWhileVictimStops; and it starts a member it
//     finds stopping once that has gone — TestWarmOfStoppingMemberStarts. A Reload that replaces
//     the member before it is ready starts the new member of its name in its stead, as a request
//     waiting for the old one waits for the new — TestWarmFollowsReload; so does one that replaces
//     a member Start is pre-warming — TestPreWarmFollowsReload.
//   - Reload keeps the process and state of a member whose Spec and pinning are unchanged, stops
//     a changed or removed one once no attempt holds it, and starts a changed one only when its
//     old process has gone — TestReload, TestReloadWaitsForRetiredSlot — in the slot the old one
//     held, evicting no other member for it — TestNewMemberTakesRetiredSlot; a request waiting for
//     the old one waits for the new one within its load_timeout from its arrival —
//     TestWaitAcrossReloadKeepsLoadTimeout. The changed member keeps
//     its place in the LRU order and its last use, and a release of its old process counts for it
//     — TestReloadChangedKeepsRecency, TestReloadRetiredReleaseCountsForNewMember.
//
// Time that carries meaning (idle_stop, load_timeout, restart backoff, the SIGTERM → SIGKILL
// grace) is read from the injected Clock, so a test moves it instead of waiting. Time that only
// paces a real process (health poll interval, probe timeout) is wall time: a fake clock cannot make
// a real process answer sooner.
package lifecycle
