// edata.cc: names for extent states (diagnostics and stats output).
#include "extent/edata.h"

namespace je {

const char* extent_state_name(ExtentState s) {
  switch (s) {
    case ExtentState::kActive: return "active";
    case ExtentState::kDirty: return "dirty";
    case ExtentState::kMuzzy: return "muzzy";
    case ExtentState::kRetained: return "retained";
    case ExtentState::kTransition: return "transition";
    case ExtentState::kMerging: return "merging";
  }
  return "?";
}

}  // namespace je
