#include "costmodel/share_device_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "core/error.h"

namespace dpro::costmodel {

namespace {

constexpr ShareGroup kGroups[] = {ShareGroup::kGemm, ShareGroup::kConv, ShareGroup::kNorm, ShareGroup::kElementwise};
constexpr double kMaxLog10Multiplier = 1.5;  // a share moves by at most 30x either way
// Decades of multiplier per decade of roofline time at most, either way. Where a prior curve
// rises steeply (up to kMaxShareSlope) a positive slope can make a larger op of the family price
// faster within the samples' range: bounded here, not excluded.
constexpr double kMaxSlope = 0.5;
constexpr double kKernelFloorScales[] = {1.0, 0.5, 0.25, 0.1};

// One sample, reduced to what its predicted latency depends on.
struct Row {
  OpFamily family;
  ShareGroup group;
  double measured_ms;
  double kernel_at_prior_ms;  // roofline / prior share (m = 1)
  double kernel_floor_ms;
  double host_factor;  // the family's (FamilyShares::host_factor)
  double roofline_ms;
  double x;  // log10(roofline us)
  std::string kernel_class;  // bmm/linear with a named kernel: gemm_kernel_class; else empty
  // GPU time alone (a Kernel Time, or a device profile's kernel): no host, the kernel floor only.
  bool kernel_timed = false;
  // Read by the multipliers: a sample's kernel time where it has one, else its latency. A
  // sample's latency beside its kernel time (fits_share false) reads the host figures only.
  bool fits_share = true;
};

struct Host {
  double overhead_ms, floor_ms;
  double kernel_floor_scale = 1;  // of the prior's kernel floors
  double min_kernel_floor_ms = 0;  // no kernel below it (a device profile's empty kernel)
};

// A row's predicted time given its kernel's share term (roofline / (share x m)): the kernel at
// least its (scaled) prior floor and the empty kernel's time, as with_device_scalars' table
// prices it; a host-timed row adds the host around it, a kernel-timed row is the kernel alone.
// (The prior's floors were fitted on host-timed latencies and hold some host: where kernel-timed
// rows show it, the fitted scale takes it out.)
double predicted_ms(const Row& r, const Host& h, double share_term_ms) {
  const double kernel = std::max({r.kernel_floor_ms * h.kernel_floor_scale, h.min_kernel_floor_ms, share_term_ms});
  if (r.kernel_timed) return kernel;
  return std::max(r.host_factor * h.floor_ms, r.host_factor * h.overhead_ms + kernel);
}

double l1_log_error(const std::vector<Row>& rows, const Host& h, const ShareMultiplier& m) {
  double sum = 0;
  for (const Row& r : rows) {
    sum += std::abs(std::log(predicted_ms(r, h, r.kernel_at_prior_ms / m.at(r.roofline_ms)) / r.measured_ms));
  }
  return sum;
}

// argmin of f over the box [lo, hi] (one or two dimensions; hi == lo fixes one): a grid of
// `steps` a side, then two finer grids around the best point. Ties (a flat objective: rows at a
// floor say nothing of the scalar) go to the point nearest `prior`.
std::array<double, 2> minimise(const std::function<double(double, double)>& f, std::array<double, 2> lo,
                               std::array<double, 2> hi, std::array<double, 2> prior, int steps) {
  auto dist = [&](std::array<double, 2> p) { return std::abs(p[0] - prior[0]) + std::abs(p[1] - prior[1]); };
  std::array<double, 2> best = {std::clamp(prior[0], lo[0], hi[0]), std::clamp(prior[1], lo[1], hi[1])};
  double fbest = f(best[0], best[1]);
  for (int pass = 0; pass < 3; ++pass, steps = 10) {
    const std::array<double, 2> step = {(hi[0] - lo[0]) / steps, (hi[1] - lo[1]) / steps};
    for (int i = 0; i <= steps; ++i)
      for (int j = 0; j <= (step[1] > 0 ? steps : 0); ++j) {
        const std::array<double, 2> p = {lo[0] + step[0] * i, lo[1] + step[1] * j};
        const double fp = f(p[0], p[1]);
        if (fp < fbest - 1e-12 || (fp <= fbest + 1e-12 && dist(p) < dist(best))) fbest = fp, best = p;
      }
    for (int d = 0; d < 2; ++d) lo[d] = std::max(lo[d], best[d] - step[d]), hi[d] = std::min(hi[d], best[d] + step[d]);
  }
  return best;
}

// The multiplier of `rows` given the host: a level, and a slope where `slope` allows one. The
// slope by profile (for each slope on a grid its best level, then finer around the best
// slope): a joint grid misses the narrow valleys that rows at a floor make.
ShareMultiplier fit_multiplier(const std::vector<Row>& rows, const Host& h, bool slope, int steps) {
  // rows: those that read the multiplier (fits_share) only
  ShareMultiplier m;
  std::vector<double> xs;
  for (const Row& r : rows) xs.push_back(r.x);
  std::sort(xs.begin(), xs.end());
  m.centre = xs[xs.size() / 2], m.lo = xs.front(), m.hi = xs.back();
  auto error = [&](double a, double b) {
    ShareMultiplier t = m;
    t.log10_at_centre = a, t.slope = b;
    return l1_log_error(rows, h, t);
  };
  auto level_at = [&](double b) {
    return minimise(error, {-kMaxLog10Multiplier, b}, {kMaxLog10Multiplier, b}, {0, b}, steps)[0];
  };
  double best_b = 0, best_a = level_at(0), fbest = error(best_a, 0);
  if (slope) {
    double lo = -kMaxSlope, hi = kMaxSlope;
    for (int pass = 0, n = 20; pass < 3; ++pass, n = 8) {
      const double step = (hi - lo) / n;
      for (int i = 0; i <= n; ++i) {
        const double b = lo + step * i, a = level_at(b), f = error(a, b);
        if (f < fbest - 1e-12 || (f <= fbest + 1e-12 && std::abs(b) < std::abs(best_b))) fbest = f, best_a = a, best_b = b;
      }
      lo = std::max(-kMaxSlope, best_b - step), hi = std::min(kMaxSlope, best_b + step);
    }
  }
  m.log10_at_centre = best_a, m.slope = best_b;
  return m;
}

std::vector<Row> share_rows(const std::vector<Row>& rows) {
  std::vector<Row> out;
  for (const Row& r : rows)
    if (r.fits_share) out.push_back(r);
  return out;
}

// One unit's rows: those that fit its multiplier (fits_share), and all of them (with the
// latencies beside kernel times), whose error the host figures are chosen by.
struct Unit {
  std::vector<Row> fit, all;
};

// Each unit at its best level (no slope, fitted on its fits_share rows) given the host: the
// error of all the rows.
double error_at_best_levels(const std::vector<Unit>& units, const std::vector<Row>& unfitted, const Host& h) {
  double total = l1_log_error(unfitted, h, ShareMultiplier{});
  for (const Unit& u : units) total += l1_log_error(u.all, h, fit_multiplier(u.fit, h, false, 60));
  return total;
}

std::vector<Row> rows_of(const ShareTable& prior, const std::vector<const Measurement*>& samples,
                         const DeviceSpec& device, bool read_kernel_time) {
  std::vector<Row> rows;
  for (const Measurement* m : samples) {
    if (m->device != &device)
      throw InputError("", "samples", "a sample measured on " + (m->device ? m->device->name : "?") + ", not on " +
                                          device.name);
    const auto f = prior.families.find(m->op.family);
    const auto k = prior.kernel_ms(m->op, device);
    const bool has_latency = m->latency_ms > 0, has_kernel = m->kernel_ms > 0 && (read_kernel_time || !has_latency);
    if (f == prior.families.end() || !k || !(has_latency || has_kernel)) continue;  // no curve: nothing to scale
    const double r = prior.roofline_ms(m->op, device);
    const double at_prior = r / prior.share(m->op.family, r, relative_intensity(m->op, device));
    const Row row{m->op.family, share_group(m->op.family), 0, at_prior, f->second.kernel_floor_ms,
                  f->second.host_factor, r,
                  std::log10(std::max(r, 1e-12) * 1e3),
                  (share_group(m->op.family) == ShareGroup::kGemm && !m->op.kernel_name.empty())
                      ? gemm_kernel_class(m->op.kernel_name)
                      : std::string()};
    // The multipliers read the kernel's own time where the sample has it (a host-timed latency
    // holds the machine's host as well); the latency beside it reads the host figures.
    if (has_kernel) {
      rows.push_back(row);
      rows.back().measured_ms = m->kernel_ms, rows.back().kernel_timed = true;
    }
    if (has_latency) {
      rows.push_back(row);
      rows.back().measured_ms = m->latency_ms, rows.back().fits_share = !has_kernel;
    }
  }
  return rows;
}

// The host figures (over [0, *fastest]; without `fastest`, start's kept) and the kernel floors'
// scale, by the error of every row with each group at its best level.
Host fit_host(const std::vector<FittedShare>& groups, const std::vector<Row>& rows, Host start,
              std::optional<double> fastest) {
  std::vector<Unit> units;
  std::vector<Row> unfitted;
  for (const Row& r : rows) {
    const auto g = std::find_if(groups.begin(), groups.end(), [&](const FittedShare& u) { return u.label == to_string(r.group); });
    if (g == groups.end()) unfitted.push_back(r);
  }
  for (const auto& g : groups) {
    units.emplace_back();
    for (const Row& r : rows)
      if (g.label == to_string(r.group)) units.back().all.push_back(r);
    units.back().fit = share_rows(units.back().all);
  }
  // Ties go to the prior's figures (clamped to the bound). The kernel floor: the prior's, or a
  // fraction of it (a host-timed prior floor holds some of the training machines' host).
  Host best_host = start;
  double fbest = 0;
  for (const double scale : kKernelFloorScales) {
    const double min_floor = start.min_kernel_floor_ms;
    const double bound = fastest.value_or(0);
    const auto best =
        fastest ? minimise([&](double c, double f) { return error_at_best_levels(units, unfitted, {c, f, scale, min_floor}); },
                           {0, 0}, {bound, bound}, {std::min(start.overhead_ms, bound), std::min(start.floor_ms, bound)}, 24)
                : std::array<double, 2>{start.overhead_ms, start.floor_ms};
    const Host h{best[0], best[1], scale, min_floor};
    const double f = error_at_best_levels(units, unfitted, h);
    if (scale == kKernelFloorScales[0] || f < fbest - 1e-12) fbest = f, best_host = h;
  }
  return best_host;
}

// Each GEMM kernel class with samples enough: the log10 shift of its rows' family multipliers
// (the family's own where fitted, else the group's) that fits them best, shrunk toward 0.
void fit_kernel_classes(DeviceScalars& out, const std::vector<Row>& rows, const Host& h,
                        const DeviceFitOptions& options) {
  auto multiplier_of = [&](OpFamily f) {
    ShareMultiplier m;
    for (const FittedShare& u : out.shares)  // groups first, then families: the last match
      if (std::find(u.families.begin(), u.families.end(), f) != u.families.end()) m = u.multiplier;
    return m;
  };
  std::map<std::string, std::vector<const Row*>> classes;
  for (const Row& r : rows)
    if (r.fits_share && !r.kernel_class.empty()) classes[r.kernel_class].push_back(&r);
  for (const auto& entry : classes) {
    const std::string& name = entry.first;
    const std::vector<const Row*>& own = entry.second;  // a named reference: clang 14 (the fuzz build) lets no lambda capture a structured binding
    if (own.size() < options.min_kernel_class_rows) continue;  // pooled into its family
    std::vector<double> base;  // each row's log10 family multiplier
    for (const Row* r : own) base.push_back(std::log10(multiplier_of(r->family).at(r->roofline_ms)));
    auto error = [&](double c, double) {
      double sum = 0;
      for (std::size_t i = 0; i < own.size(); ++i) {
        const Row& r = *own[i];
        sum += std::abs(std::log(predicted_ms(r, h, r.kernel_at_prior_ms / std::pow(10.0, base[i] + c)) / r.measured_ms));
      }
      return sum;
    };
    const double c = minimise(error, {-kMaxLog10Multiplier, 0}, {kMaxLog10Multiplier, 0}, {0, 0}, 120)[0];
    const double n = static_cast<double>(own.size());
    out.kernel_classes.push_back({name, own.size(), c, c * n / (n + options.kernel_class_shrink_rows)});
  }
}

}  // namespace

ShareGroup share_group(OpFamily f) {
  switch (f) {
    case OpFamily::kBmm:
    case OpFamily::kLinear: return ShareGroup::kGemm;
    case OpFamily::kConv2d: return ShareGroup::kConv;
    case OpFamily::kLayerNorm:
    case OpFamily::kSoftmax: return ShareGroup::kNorm;
    default: return ShareGroup::kElementwise;
  }
}

const char* to_string(ShareGroup g) {
  switch (g) {
    case ShareGroup::kGemm: return "GEMM (bmm, linear)";
    case ShareGroup::kConv: return "conv";
    case ShareGroup::kNorm: return "ln/softmax";
    case ShareGroup::kElementwise: return "elementwise";
  }
  return "?";
}

DeviceScalars fit_device_scalars(const ShareTable& prior, const std::vector<const Measurement*>& samples,
                                 const DeviceSpec& device, const DeviceFitOptions& options) {
  if (samples.empty()) throw InputError("", "samples", "no samples of " + device.name);
  const std::vector<Row> rows = rows_of(prior, samples, device, options.read_kernel_time);
  DeviceScalars out;
  std::map<OpFamily, std::size_t> per_family;
  for (const Row& r : rows)
    if (r.fits_share) ++out.rows[r.group], ++per_family[r.family];  // one per sample
  // Units: each group with samples enough (all its families), then each family with its own.
  for (ShareGroup g : kGroups) {
    if (out.rows[g] == 0) continue;
    if (out.rows[g] < options.min_group_rows) {
      out.notes.push_back(fmt::format("{}: {} sample{}, fewer than the {} a multiplier needs: the prior share (x1)",
                                      to_string(g), out.rows[g], out.rows[g] == 1 ? "" : "s", options.min_group_rows));
      continue;
    }
    FittedShare u{to_string(g), {}, out.rows[g], {}};
    for (const auto& [family, f] : prior.families)
      if (share_group(family) == g) u.families.push_back(family);
    out.shares.push_back(std::move(u));
  }
  const std::size_t groups = out.shares.size();
  for (const auto& [family, n] : per_family)
    if (n >= options.min_family_rows && n < out.rows[share_group(family)])  // a group of one family: the group's
      out.shares.push_back({to_string(family), {family}, n, {}});

  std::vector<double> small;  // elementwise samples that read the host
  for (const Row& r : rows)
    if (r.group == ShareGroup::kElementwise && !r.kernel_timed &&
        r.measured_ms < options.host_rows_below_floors * prior.host_floor_ms)
      small.push_back(r.measured_ms);
  Host host{prior.host_overhead_ms, prior.host_floor_ms, 1, std::max(0.0, options.min_kernel_floor_ms)};
  out.min_kernel_floor_ms = host.min_kernel_floor_ms;
  out.host_fitted = small.size() >= options.min_host_rows;
  // The kernel floors' scale is read with the host, or from kernel times alone (the host kept).
  out.kernel_floor_fitted =
      out.host_fitted || std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.kernel_timed; });
  if (out.kernel_floor_fitted)
    host = fit_host({out.shares.begin(), out.shares.begin() + static_cast<std::ptrdiff_t>(groups)}, rows, host,
                    out.host_fitted ? std::optional<double>(*std::min_element(small.begin(), small.end()))
                                    : std::nullopt);
  if (!out.host_fitted)
    out.notes.push_back(fmt::format("host: {} elementwise sample{} under {:.0f} us, fewer than the {} needed: the "
                                    "prior's overhead and floor",
                                    small.size(), small.size() == 1 ? "" : "s",
                                    options.host_rows_below_floors * prior.host_floor_ms * 1e3, options.min_host_rows));
  out.host_overhead_ms = host.overhead_ms;
  out.host_floor_ms = host.floor_ms;
  out.kernel_floor_scale = host.kernel_floor_scale;
  // With kernel classes, alternately: the multipliers on the rows with their class's shift taken
  // out, then each class's shift given the multipliers (a class's rows spread over a family's
  // range would otherwise tilt its multiplier).
  const int passes = options.min_kernel_class_rows > 0 ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    std::map<std::string, double> shift;
    for (const FittedKernelClass& k : out.kernel_classes) shift[k.kernel_class] = k.log10;
    for (FittedShare& u : out.shares) {
      std::vector<Row> own;
      for (const Row& r : rows)
        if (r.fits_share && std::find(u.families.begin(), u.families.end(), r.family) != u.families.end()) {
          own.push_back(r);
          if (const auto c = shift.find(r.kernel_class); c != shift.end())
            own.back().kernel_at_prior_ms /= std::pow(10.0, c->second);
        }
      u.multiplier = fit_multiplier(own, host, own.size() >= options.min_slope_rows, 120);
    }
    if (options.min_kernel_class_rows > 0) {
      out.kernel_classes.clear();
      fit_kernel_classes(out, rows, host, options);
    }
  }
  return out;
}

ShareTable with_device_scalars(const ShareTable& prior, const DeviceScalars& scalars) {
  ShareTable t = prior;
  t.host_overhead_ms = scalars.host_overhead_ms;
  t.host_floor_ms = scalars.host_floor_ms;
  for (auto& [family, f] : t.families)
    f.kernel_floor_ms = std::max(f.kernel_floor_ms * scalars.kernel_floor_scale, scalars.min_kernel_floor_ms);
  for (const FittedShare& u : scalars.shares)  // in order: a family's own after its group's
    for (OpFamily f : u.families) t.share_multiplier[f] = u.multiplier;
  for (const FittedKernelClass& k : scalars.kernel_classes) t.kernel_class_log10[k.kernel_class] = k.log10;
  return t;
}

std::vector<std::string> describe(const DeviceScalars& s) {
  std::vector<std::string> out;
  if (s.kernel_floor_fitted == s.host_fitted)
    out.push_back(fmt::format("host overhead {:.1f} us, host floor {:.1f} us, kernel floors x{:.2g} ({})",
                              s.host_overhead_ms * 1e3, s.host_floor_ms * 1e3, s.kernel_floor_scale,
                              s.host_fitted ? "fitted" : "the prior's"));
  else
    out.push_back(fmt::format("host overhead {:.1f} us, host floor {:.1f} us (the prior's), kernel floors x{:.2g} "
                              "(fitted on kernel times)",
                              s.host_overhead_ms * 1e3, s.host_floor_ms * 1e3, s.kernel_floor_scale));
  if (s.min_kernel_floor_ms > 0)
    out.push_back(fmt::format("kernel floors at least {:.2f} us (the device profile's empty kernel)", s.min_kernel_floor_ms * 1e3));
  for (const FittedShare& u : s.shares) out.push_back(fmt::format("{}: {} ({} samples)", u.label, describe(u.multiplier), u.rows));
  for (const FittedKernelClass& k : s.kernel_classes)
    out.push_back(fmt::format("GEMM kernel {}: x{:.3g} on its family's share ({} samples; x{:.3g} before shrinkage)",
                              k.kernel_class, std::pow(10.0, k.log10), k.rows, std::pow(10.0, k.log10_fitted)));
  for (const auto& n : s.notes) out.push_back(n);
  return out;
}

std::string describe(const ShareMultiplier& m) {
  return fmt::format("share x{:.3g} at 10^{:.2f} us of roofline time, {:+.2f} decades per decade over 10^{:.2f}-10^{:.2f} us",
                     std::pow(10.0, m.log10_at_centre), m.centre, m.slope, m.lo, m.hi);
}

std::vector<std::size_t> pick_share_samples(const std::vector<OpDesc>& ops, const DeviceSpec& device, std::size_t n,
                                            std::uint64_t seed) {
  std::map<ShareGroup, std::vector<std::pair<double, std::size_t>>> groups;  // (roofline ms, index)
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].describable() && ops[i].family != OpFamily::kUnknown)
      groups[share_group(ops[i].family)].emplace_back(share_roofline_ms(ops[i], device), i);
  // Quotas: one at a time to each group that has rows left, in turn.
  std::map<ShareGroup, std::size_t> quota;
  for (std::size_t given = 0, progress = 1; given < n && progress;) {
    progress = 0;
    for (auto& [g, v] : groups)
      if (given < n && quota[g] < v.size()) ++quota[g], ++given, ++progress;
  }
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> out;
  for (auto& [g, v] : groups) {
    std::sort(v.begin(), v.end());
    const std::size_t k = quota[g];
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t lo = j * v.size() / k, hi = (j + 1) * v.size() / k;
      out.push_back(v[lo + static_cast<std::size_t>(rng() % (hi - lo))].second);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dpro::costmodel
