// What kolorun's elastic driver does when one of its workers exits, as a pure function of what
// it knows about that worker and the job, so the failure policy reads (and is tested) in one
// place: a member's success ends the job, a failure blacklists the worker's host and the job goes
// on with the other hosts' members, or fails at once when none of them is left.
#pragma once

namespace kolo::launcher {

struct ElasticExitFacts {
  bool success = false;    // exited 0
  bool member = false;     // in the latest published round
  bool removed = false;    // its host or slot left the pool: no assignment from now on
  bool dismissed = false;  // kolorun left it out of a round and may have killed it
  bool stopping = false;   // kolorun is stopping every worker (the job ends or was interrupted)
  bool ending = false;     // the job is ending: a member finished, or a failure decided it
  // Members of the latest round on other hosts still running: they hold the committed state.
  bool survivors_elsewhere = false;
};

enum class ElasticExitAction {
  job_finishes,           // a member of the round succeeded: no more rounds, the others end too
  left_normally,          // success of a worker outside the round (its host was removed)
  logged_while_stopping,  // kolorun is stopping the workers: their statuses say nothing new
  failure_while_ending,   // failed while the job ends: the job fails (with this status if first)
  dismissed_ended,        // killed by kolorun after it left the job: not a failure
  newcomer_failed,        // never joined a round: blacklist its host, no reset for the members
  member_lost,            // blacklist its host (its workers leave), the survivors reset
  no_survivor,            // blacklist its host; nobody holds the state: the job fails now
};

ElasticExitAction elastic_exit_action(const ElasticExitFacts& facts);

}  // namespace kolo::launcher
