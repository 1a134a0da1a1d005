#pragma once
// Roofline share: a cross-GPU analytic model (issue 36). A kernel runs at a share of its
// roofline bound that depends on what it is (its op family) and how large it is against the GPU
// (its roofline time: a tiny kernel cannot fill the GPU, a large one reaches the family's
// sustained fraction of bandwidth or peak). The share curves are fitted on the training GPUs'
// measurements, each GPU weighing the same (the prior is the median of their per-GPU curves), so
// that a GPU outside the data enters through its datasheet roofline alone.
//
//   kernel ms  = max(kernel floor(family), roofline ms / share(family, log10 roofline us))
//   latency ms = max(h x host floor, h x host overhead + kernel ms)   (host-timed, as the shared
//                data; h: the family's host factor, 1 for the elementwise ops)
//
// The host figures belong to the machine that timed the ops (launch and the CUDA events around
// one op), not to the GPU: a prediction for a machine outside the data takes the training
// machines' median. Everything is in milliseconds; the table is a small JSON file
// (data/costmodel/shares.json) written by `costmodel fit-shares`.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/cost_model.h"
#include "costmodel/dataset.h"

namespace dpro::costmodel {

// The roofline bound of an op's kernel in ms, with no overhead: max(flops / rate, bytes /
// bandwidth), the fp32 rate being DeviceSpec::sustained_fp32_flops (one FP32 datapath); 0 when
// the op is not describable.
double share_roofline_ms(const OpDesc& op, const DeviceSpec& device);

// A share curve: log10(share) at bucket centres log10(roofline us) = (first + i) x width, linear
// in between, flat beyond the ends.
struct ShareCurve {
  int first = 0;
  std::vector<double> log10_share;
};

// One family's curves, one per bucket of its arithmetic intensity against the GPU's ridge point
// (log10(intensity / ridge) = key x intensity width; a GEMM of a few rows is memory-bound on
// every GPU, a square one compute-bound): the nearest bucket's curve prices an op.
struct FamilyShares {
  std::map<int, ShareCurve> by_intensity;
  double kernel_floor_ms = 0;
  // The family's host work (dispatch, launch and the events around one op) against the
  // elementwise ops' on the same machine: its host overhead and floor are the machine's times
  // this factor. Fitted where rows give both a latency and a Kernel Time (a linear op's host
  // takes 1.5-1.7x an add's there); 1 for the elementwise families, which set the machine's.
  double host_factor = 1;
};

// log10(arithmetic intensity / ridge point), within +-kIntensityLimit: the second feature.
inline constexpr double kIntensityLimit = 2.0;
double relative_intensity(const OpDesc& op, const DeviceSpec& device);

// A device's correction of a family's share: log10 m = log10_at_centre + slope x (x - centre),
// x = log10(roofline us) held within [lo, hi] (the samples' range: no extrapolated trend).
struct ShareMultiplier {
  double log10_at_centre = 0, slope = 0, centre = 0, lo = 0, hi = 0;
  double at(double roofline_ms) const;
};

// GEMM kernel-choice features (issue 36, deliverable 2): how much of the work a GEMM's kernel
// runs is padding. Tile efficiency: the output elements over those of the kernel's tiles (the
// tile from its name: sgemm_128x64, tilesize64x128x8, cutlass_..._128x64_..., nvjet_..._128x64_;
// of the two orientations the better). Wave efficiency: the launched blocks (Grid x*y*z: split-K
// and batch included) over those of the waves they take, at `blocks_per_sm` resident blocks per
// SM. Where the name has no tile, tile efficiency is 1; where the grid is not recorded, the
// blocks are the output tiles; where neither is known (an op of a trace that did not record its
// kernel), the likely tile is 128 (64 where a side is under 128) on each side, one block per
// tile (or, with likely_split_k, at least one full wave).
struct GemmWaves {
  bool tile = false, wave = false;
  bool conv_wave = false;  // wave efficiency for conv's kernels too (their grid; no tile)
  int blocks_per_sm = 1;
  double exponent = 1;  // the compute bound is divided by efficiency^exponent
  // An op whose kernel is unknown: its likely kernel splits K so that fewer output tiles than
  // the GPU's block slots still fill one wave (cuBLAS's split-K), instead of one block per tile.
  bool likely_split_k = false;
  bool any() const { return tile || wave || conv_wave; }
  std::string form() const;  // "none", "tile", "wave", "tile+wave", each "+conv" when conv_wave
};
// In (0, 1]; 1 for an op these features do not apply to.
double gemm_efficiency(const OpDesc& op, const DeviceSpec& device, const GemmWaves& form);
// The first "<a>x<b>" of a kernel name with both sides >= 16 ({0, 0}: none).
std::pair<int, int> kernel_name_tile(const std::string& name);
// A GEMM kernel's class: its function name ("void " and call arguments cut off; CUTLASS's
// "cutlass::Kernel<X>" (Kernel2<X>) read as X) without the alignment tokens ("_align1", "_aligna4",
// "_alignc4") that vary with the shape, not with the kernel's code: what a few-shot fit gives a
// multiplier of its own (share_device_fit.h). Empty for an empty name.
std::string gemm_kernel_class(const std::string& kernel_name);

struct ShareTable {
  GemmWaves gemm;  // absent from a file: none
  double bucket_width = 0.5;     // decades of roofline time
  double intensity_width = 0;    // decades of relative intensity per bucket; 0: one curve per family
  std::map<OpFamily, FamilyShares> families;
  double host_overhead_ms = 0;  // prior: median of the training machines'
  double host_floor_ms = 0;     // prior: median of the training machines'
  // Per training GPU, for the record (not used to predict: a trace's machine is not theirs).
  std::map<std::string, double> gpu_host_overhead_ms, gpu_host_floor_ms;
  // Training GPUs whose rows gave their kernels' GPU time (a Kernel Time column): the curves and
  // kernel floors read that time, not their latency less a host overhead.
  std::set<std::string> gpu_timed;
  // Per GPU whose rows entered a family's curves (a bucket of at least min_rows of them), those
  // families, for the record (`costmodel devices`): a GPU may give a family's curves without a
  // host figure of its own (NeuSight's A100 80GB: conv rows only). Absent from tables written
  // before it: empty.
  std::map<std::string, std::set<OpFamily>> curve_gpus;
  std::string provenance;  // the command and data that made it
  // A device's sustained-share multiplier per family (share_device_fit.h), not capped at
  // kMaxShare (a cache-resident op can beat DRAM bandwidth); absent: 1. Not in the JSON file:
  // it belongs to one target GPU, not to the prior.
  std::map<OpFamily, ShareMultiplier> share_multiplier;
  // A device's further multiplier (log10) per GEMM kernel class (gemm_kernel_class), for bmm and
  // linear ops whose kernel is named; absent: 1. Not in the JSON file either.
  std::map<std::string, double> kernel_class_log10;

  // share_roofline_ms over gemm_efficiency (the padded tiles and whole waves the kernel runs).
  double roofline_ms(const OpDesc& op, const DeviceSpec& device) const;
  // The share of its roofline bound an op's kernel reaches: in (0, kMaxShare].
  double share(OpFamily family, double roofline_ms, double relative_intensity = 0) const;
  // nullopt where the op is not describable or its family has no curve.
  std::optional<double> kernel_ms(const OpDesc& op, const DeviceSpec& device) const;
  std::optional<double> latency_ms(const OpDesc& op, const DeviceSpec& device) const;
  // The host-timed latency around a kernel of `family` that takes `kernel_ms`: max(h x host
  // floor, h x host overhead + kernel_ms), h the family's host factor (1 without a curve).
  double latency_around(OpFamily family, double kernel_ms) const;
};

inline constexpr double kMaxShare = 1.0;
// A family's host factor is held within these (a factor outside is no dispatch path's).
inline constexpr double kMinHostFactor = 0.25, kMaxHostFactor = 4.0;
// Lowest share a table file may give: a millionth of the roofline (the shipped tables' lowest is
// about 1e-3); below it a time is no kernel's, and at a denormal one it is infinite.
inline constexpr double kMinShare = 1e-6;
// Highest rise of log10(share) per decade of roofline time a fitted curve keeps (below 1, so
// that a kernel's time rises with its roofline time: log t = log R - log share).
inline constexpr double kMaxShareSlope = 0.9;

// The defaults are the form leave-one-GPU-out over the training GPUs chose (docs/costmodel.md,
// "Roofline share").
struct ShareFitOptions {
  double bucket_width = 0.25;
  double intensity_width = 1.0;
  std::size_t min_rows = 5;  // per GPU, family and bucket
  // Rows within this factor of their machine's host floor are host-bound: their latency says
  // nothing of the kernel's share and they are left out of the curves (0: all rows).
  double floor_margin = 0;
  double floor_quantile = 0.05;  // of a machine's elementwise latencies: its host floor
  bool host_floor = true;        // false: latency = host overhead + kernel (no max)
  GemmWaves gemm;                // none: the first step's form
  // Rows with a Kernel Time (GPU-timed) give a kernel's time directly; false: their latency, as
  // every other row's (the form before GPU-timed rows were read).
  bool use_kernel_time = true;
  // Where a family has GPU-timed rows, a host-timed GPU's bucket whose median latency is under
  // this factor of its machine's host floor (its kernel part mostly the host's noise) is left out.
  double timed_floor_margin = 2.0;
  // Per family, a host factor (FamilyShares::host_factor) from the rows that give both a latency
  // and a Kernel Time, taken out of the other machines' latencies with their host overhead;
  // false: every family's host is the elementwise ops' (the form before).
  bool family_host = true;
  // Beyond a GPU's largest bucket (of a family and intensity), the GPU counts at that bucket's
  // share in the per-bucket median; false: only GPUs with rows in a bucket count there (the
  // largest buckets are then the few GPUs that reach them: slow, power-limited cards).
  bool hold_large = true;
};

// Fits the table on host-timed latencies (Measurement::latency_ms) of one or more GPUs, and on
// GPU-timed kernel times (Measurement::kernel_ms) where rows have them: the host figures always
// from latencies (each machine's own), the shares and kernel floors from GPU time where there is
// some (ShareFitOptions::use_kernel_time, timed_floor_margin). Throws
// InputError when `data` holds no GPU with a host overhead (kernel_time.h: large elementwise rows).
ShareTable fit_share_table(const std::vector<const Measurement*>& data, const ShareFitOptions& options = {});

// Per non-elementwise family: the median over the GPUs with rows that give both a latency and a
// Kernel Time (at least kOverheadMinRows of the family) of its rows' median latency less kernel
// time over the elementwise families' (the median of theirs), held within [kMinHostFactor,
// kMaxHostFactor], to 4 significant digits. Empty without such rows.
std::map<OpFamily, double> family_host_factors(const std::vector<const Measurement*>& data);

std::string share_table_to_json(const ShareTable& table);
// Throws InputError naming `file` and the offending item (a missing field, a share that is not a
// number in (0, 1], an unknown family, a floor below 0).
ShareTable share_table_from_json(const std::string& text, const std::string& file);
ShareTable load_share_table(const std::string& path);

// The factor a kernel measured on `origin` is re-timed by for `target` (`replay --device
// --pricer roofline-share`): kernel_ms(target) / kernel_ms(origin) of this table. The ratio
// cancels the host figures entirely and the share prior where the op sits at the same point of
// its curve on both GPUs. nullopt where the table does not price the op (not describable, a
// family without curves). 1 for origin == target.
std::optional<double> share_kernel_ratio(const ShareTable& table, const OpDesc& op, const DeviceSpec& origin,
                                         const DeviceSpec& target);
// The same ratio with the target's side priced by `target_table` (the prior with a few-shot fit of
// the target's scalars applied, share_device_fit.h: `replay --device --pricer roofline-share
// --device-samples`) and the origin's by `origin_table` (the prior). Still 1 for origin == target:
// the op was measured on the GPU the samples describe.
std::optional<double> share_kernel_ratio(const ShareTable& origin_table, const ShareTable& target_table,
                                         const OpDesc& op, const DeviceSpec& origin, const DeviceSpec& target);

// As a CostModel: the kernel time (GPU time, what a trace's kernel records), or with
// `host_timed` the latency.
class RooflineShareModel : public CostModel {
 public:
  RooflineShareModel(ShareTable table, bool host_timed) : table_(std::move(table)), host_timed_(host_timed) {}
  std::string name() const override { return "roofline-share"; }
  std::optional<Nanos> predict(const OpDesc& op, const DeviceSpec& device) const override;
  const ShareTable& table() const { return table_; }

 private:
  ShareTable table_;
  bool host_timed_;
};

}  // namespace dpro::costmodel
