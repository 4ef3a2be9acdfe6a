#include "launcher/elastic/exit_policy.h"

namespace kolo::launcher {

ElasticExitAction elastic_exit_action(const ElasticExitFacts& facts) {
  if (facts.success) {
    return facts.member && !facts.removed ? ElasticExitAction::job_finishes
                                          : ElasticExitAction::left_normally;
  }
  if (facts.stopping) return ElasticExitAction::logged_while_stopping;
  // Before `ending`: a newcomer stopped because the job finished is no failure of the job.
  if (facts.removed && facts.dismissed) return ElasticExitAction::dismissed_ended;
  if (facts.ending) return ElasticExitAction::failure_while_ending;
  if (!facts.member) return ElasticExitAction::newcomer_failed;
  return facts.survivors_elsewhere ? ElasticExitAction::member_lost
                                   : ElasticExitAction::no_survivor;
}

}  // namespace kolo::launcher
