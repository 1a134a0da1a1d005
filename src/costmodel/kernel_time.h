#pragma once
// Kernel times against measured op latencies. The training data time each op from the host
// (launch, the op's kernels, synchronisation), so a row's latency is a kernel time plus an
// overhead of the machine it was measured on: fitted latency = c + bytes / bandwidth on the
// large elementwise rows gives c = 14-26 us on the five GPUs of the shared data, never 0.
// A trace's kernel durations are GPU time only. A --device what-if that re-times a kernel
// by the ratio of two predicted latencies, f(target) / f(origin), therefore compresses
// every speed-up and slow-down towards 1 for kernels of tens to hundreds of microseconds;
// the ratio of the kernel parts, (f(target) - c_target) / (f(origin) - c_origin), does not.
// Near the floor of an op (the fastest it was ever measured, 25-45 us, where the host
// dispatch, not the kernel, sets the latency) a prediction says nothing about the kernel and
// the latency ratio is kept. docs/costmodel.md, table (d), measures both.
#include <map>
#include <string>
#include <vector>

#include "costmodel/dataset.h"
#include "costmodel/learned_model.h"
#include "costmodel/residual_correction.h"

namespace dpro::costmodel {

// Rows an overhead is fitted on: elementwise ops moving at least this many bytes (far above
// the floor: at 1.5 TB/s, 27 us of kernel), at least kOverheadMinRows of them per family.
inline constexpr double kOverheadMinBytes = 40e6;
inline constexpr std::size_t kOverheadMinRows = 8;

// Per GPU (DeviceSpec::name) of `data`: the measurement overhead in ms, the median over the
// elementwise families of the intercept of a least-squares line latency = c + k x bytes
// through that family's rows of at least kOverheadMinBytes. GPUs without such rows (a GPU
// measured only for conv) are absent. Intercepts below 0 count as 0.
std::map<std::string, double> measurement_overheads_ms(const std::vector<const Measurement*>& data);

// The median of the overheads (0 for none): the overhead assumed for a GPU without its own,
// and the one the unseen-GPU network's predictions carry (it learned from all of them).
double typical_overhead_ms(const std::map<std::string, double>& overheads);

// Factor for a trace kernel measured on the origin GPU, from the predicted latencies of its op
// on the target and on the origin, the overheads those predictions carry and the op family's
// floor: (target - w c_target) / (origin - w c_origin), where w goes from 0 for ops whose
// predicted latencies are both at or below the floor to 1 for ops at twice the floor or more
// (linear in between); each kernel part is kept at a quarter of its latency or more. With no
// overheads (a model file without them) or no floor, it is the latency ratio target / origin.
double kernel_time_ratio(double target_ms, double origin_ms, double target_overhead_ms, double origin_overhead_ms,
                         double floor_ms);

// What a --device what-if multiplies a trace kernel's time by when the learned model prices its
// op (and what table (d) scores as such): kernel_time_ratio, held within
// physical_ratio_range(op, origin, target) (scaling.h; a bound between GPUs of one chip only).
double learned_kernel_factor(const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target, double target_ms,
                             double origin_ms, double target_overhead_ms, double origin_overhead_ms,
                             double floor_ms);

// learned_kernel_factor for many kernels at once, priced as `replay --device` prices them: each op
// on the target (its identity used where the model knows it) and on its origin GPU (by identity
// only where the model knows the target too, so that the ratio compares like with like), the
// target's prediction multiplied by `correction` (few-shot samples; null: none), each GPU's
// overhead once.
struct LearnedKernelFactors {
  std::vector<double> factor;                          // per op
  double target_overhead_ms = 0;                       // taken out of the target's predictions
  std::map<const DeviceSpec*, double> origin_overhead_ms;  // per origin GPU
};
LearnedKernelFactors learned_kernel_factors(const LearnedModel& model, const std::vector<OpDesc>& ops,
                                            const std::vector<const DeviceSpec*>& origins, const DeviceSpec& target,
                                            const ResidualCorrection* correction);

}  // namespace dpro::costmodel
