#pragma once

#include <string>
#include <vector>

namespace tewb {

// A new run's name, distinct from the names of the runs already shown or queued (`taken`), so that a re-run of
// the same settings is told apart in tables, legends and exports: the name itself when it is free, otherwise
// "<name> #2", "#3", ... with the smallest number free. A name that already ends in " #<number>" is numbered from
// its base, so re-running "te bf16 #2" gives "te bf16 #3", not "te bf16 #2 #2". Where the number would take the
// name past kMaxRunNameLength, the base is shortened at a UTF-8 character boundary.
std::string distinct_name(const std::string& name, const std::vector<std::string>& taken);

}  // namespace tewb
