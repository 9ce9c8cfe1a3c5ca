// Start-up's recovery: the farm's memory rebuilt from the store. Every campaign comes
// back with its candidates (leases in flight go back to the queue: they died with the
// previous process) and its progress, and every worker with its record and counts;
// no worker is alive until it registers again.
#pragma once

#include "common/status.h"
#include "coordinator/farm_state.h"
#include "storage/store.h"

namespace schedfarm {

// Fills an empty `farm` from `store`. An error names the campaign whose records do not
// restore.
Status RestoreFarm(Store& store, FarmState* farm);

}  // namespace schedfarm
