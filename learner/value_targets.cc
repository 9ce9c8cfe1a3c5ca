#include "learner/value_targets.h"

namespace schedfarm {

void SetPrefixTarget(const ScheduleSpace& space, const std::vector<MeasuredSchedule>& measured,
                     ValuePrefix* prefix) {
  const std::string prefix_hash = ScheduleHash(space, prefix->prefix());
  prefix->set_target_seconds(0);
  prefix->clear_target_hash();
  prefix->set_target_stddev_seconds(0);
  for (const MeasuredSchedule& m : measured) {
    if (m.schedule.stages_size() < prefix->stages()) continue;
    if (prefix->target_seconds() > 0 && m.seconds >= prefix->target_seconds()) continue;
    ScheduleSpec head = m.schedule;
    head.mutable_stages()->DeleteSubrange(prefix->stages(),
                                          head.stages_size() - prefix->stages());
    head.set_partial(prefix->prefix().partial());
    if (!space.Check(head).ok() || ScheduleHash(space, head) != prefix_hash) continue;
    prefix->set_target_seconds(m.seconds);
    prefix->set_target_hash(m.hash);
    prefix->set_target_stddev_seconds(m.stddev_seconds);
  }
}

}  // namespace schedfarm
