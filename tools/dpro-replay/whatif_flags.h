#pragma once
// The what-if flags of `dpro-replay replay`: each binds to a field of a rewrite's options
// (whatif/device_retime.h, whatif/comm_retime.h, whatif/precision.h); nothing here computes.
#include <CLI/CLI.hpp>

#include <algorithm>

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "optimizer/plan.h"
#include "optimizer/space.h"
#include "whatif/evaluate.h"
#include "whatif/sweep.h"

namespace dpro::cli {

class WhatIfFlags {
 public:
  // kConditions: the help shows only the flags that set what-if conditions (a search's or a
  // plan's), not those a search decides (--bucket-mb, --compress, --precision-*) nor
  // --device-samples; conditions() refuses those with a message.
  // kSweep (`dpro-replay sweep`): --device, --ranks and each --set key take several values
  // separated by ','; sweep_axes() lists those given more than one, at() gives one point's flags.
  enum class Flags { kAll, kConditions, kSweep };
  void add_to(CLI::App& replay, Flags flags = Flags::kAll);
  // The rewrites the flags ask for, in the order they apply (host, precision, device, then
  // communication);
  // empty when none is asked for. `--set host.*` values go to the host rewrite, the others to
  // the cluster's. Throws OptionError for a bad host setting or --compress value.
  std::vector<whatif::Rewrite> rewrites() const;
  // The flags as the conditions of an optimizer search or a plan (names; the resource paths
  // apart). Throws InputError for --bucket-mb and --compress (what the buckets and compression
  // strategies decide), --precision-dtype (the precision strategy's), --device-samples and a --pricer other than
  // the default (a plan does not carry them).
  optimizer::Conditions conditions() const;
  optimizer::ResourcePaths paths() const;
  // kSweep: the settings given several values, in the order device, ranks, then --set keys as given.
  std::vector<whatif::SweepAxis> sweep_axes() const;
  // kSweep: these flags with one value for each swept setting (the point's). Throws InputError
  // naming the flag for a job size that is no number.
  WhatIfFlags at(const whatif::SweepPoint& point) const;
  // Whether any what-if flag was given (host settings included).
  bool any() const {
    return device_enabled() || comm_enabled() || precision_enabled() || !comm_.settings.empty() ||
           !device_.origin_device.empty() || !pricer_default();
  }
  bool device_enabled() const { return !device_.device.empty(); }
  bool precision_enabled() const { return !precision_dtype_.empty(); }
  bool pricer_default() const { return device_.pricer == "learned"; }
  bool comm_enabled() const {
    return !comm_.cluster.empty() ||
           std::any_of(comm_.settings.begin(), comm_.settings.end(),
                       [](const std::string& s) { return !whatif::is_host_setting(s); }) ||
           comm_.ranks.has_value() || comm_.bucket_mb.has_value() || !compress_.empty();
  }

 private:
  // Throws InputError naming --pricer for a value that is no pricer, or one given without --device.
  void check_pricer() const;
  whatif::DeviceRetime device_;
  whatif::CommRetime comm_;  // settings: every --set value, host ones included
  std::string compress_;     // --compress, parsed by comm::parse_compression
  std::string precision_dtype_;
  std::string ranks_list_;  // kSweep: --ranks as given ("8,16,64")
  std::vector<std::string> precision_classes_;
  std::string device_profile_;  // --device-profile
};

// The error as the user sees it: the library's option name as its flag ("bucket_mb" ->
// "--bucket-mb"), then the value ("--ranks 20: ...").
InputError with_flag(const OptionError& e);

}  // namespace dpro::cli
