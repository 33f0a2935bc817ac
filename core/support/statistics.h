// Summary statistics of timings, one definition for the tuner, its records and `agate run`
// (they compare each other's numbers, so they must agree on what a median is).
#ifndef AGATE_CORE_SUPPORT_STATISTICS_H_
#define AGATE_CORE_SUPPORT_STATISTICS_H_

#include <vector>

namespace agate {

// The median: the middle value, or the mean of the two middle values of an even count; 0 for
// none. Takes a copy (it sorts).
double Median(std::vector<double> values);

}  // namespace agate

#endif  // AGATE_CORE_SUPPORT_STATISTICS_H_
