#include "whatif_flags.h"

#include "resource_paths.h"

namespace dpro::cli {

void WhatIfFlags::add_to(CLI::App& replay, Flags flags) {
  replay.add_option("--device", device_.device, "Re-time every GPU op for this GPU (e.g. H100-SXM5-80GB)");
  replay.add_option("--origin-device", device_.origin_device,
                    "GPU the trace was recorded on, when the trace does not say (over a GPU it records: with a "
                    "warning)");
  replay.add_option("--costmodel", device_.model_path, "Learned cost model file")
      ->default_val(resource_paths().model_path);
  replay.add_option("--device-specs", device_.device_dir, "Directory of GPU spec JSON files")
      ->default_val(resource_paths().device_dir);
  replay.add_option("--device-samples", device_.samples_path,
                    "Ops measured on the --device GPU (CSV in the shared-data schema, or a directory of "
                    "them): the learned model is corrected by them (few-shot); with --pricer roofline-share the "
                    "target's share scalars are fitted on them (the target's side of the ratio only)");
  replay.add_option("--origin-samples", device_.origin_samples_path,
                    "With --pricer roofline-share: ops measured on the GPU the trace ran on (CSV in the shared-data "
                    "schema, or a directory of them): each GPU's share scalars fitted on its rows price the origin's "
                    "side of the ratio");
  replay.add_option("--pricer", device_.pricer,
                    "What prices --device's described kernels: learned (the learned model's kernel-time factor;\n"
                    "between GPUs of one chip the same-chip rule) or roofline-share (the kernel-time ratio of the\n"
                    "analytic roofline-share model of --shares, on every pair of GPUs; no LibTorch)")
      ->default_val("learned");
  replay.add_option("--shares", device_.shares_path, "Share table of the roofline-share model (--pricer roofline-share)")
      ->default_val(resource_paths().shares_path);
  replay.add_option("--precision-dtype", precision_dtype_,
                    "Run GEMMs, convolutions and the elementwise ops between them at this dtype on the trace's own "
                    "GPU, as PyTorch autocast does: bf16, fp16, tf32 (fp32 GEMMs on TF32 tensor cores), fp8 "
                    "(docs/precision.md)");
  replay.add_option("--precision-classes", precision_classes_,
                    "Op classes --precision-dtype lowers: gemm, conv, elementwise, all, or part of gemm or conv: conv@0,-1\n"
                    "(the class's ops at those positions in a step, negative from its end), conv@^0,-1 (the others),\n"
                    "or layers: conv#0,-1 (a forward op and the backward ops autograd pairs with it, by the sequence\n"
                    "numbers torch.profiler and emit_nvtx record; negative from the last), conv#^0,-1\n"
                    "(default: all; repeatable)")
      ->allow_extra_args(false);
  replay.add_option("--device-profile", device_profile_,
                    "A device profile of the GPU the what-ifs price work on (the trace's, or --device's), written by\n"
                    "'dpro-exec calibrate': its measured GEMM throughput per dtype and math mode, elementwise bandwidth,\n"
                    "cast and compression kernel curves replace the priors of the precision and gradient compression\n"
                    "what-ifs (the optimizer's too), its elementwise bandwidth and launch cost price op fusion (--plan,\n"
                    "optimize), its copy bandwidths re-time the copies of a --device re-timing.\n"
                    "A profile of another GPU (another device-catalog entry than --device's, else than every GPU the\n"
                    "trace recorded) is an error (docs/executor.md)");
  replay.add_option("--cluster", comm_.cluster, "Re-time NCCL ops for this cluster (a name in --clusters-dir)");
  replay.add_option("--origin-cluster", comm_.origin_cluster,
                    "Cluster the trace was recorded on (default: guessed from its GPUs)");
  replay.add_option("--clusters-dir", comm_.clusters_dir, "Directory of cluster JSON files")
      ->default_val(resource_paths().cluster_dir);
  replay.add_option("--set", comm_.settings,
                    "Change the target cluster: network.inter_node_gbps, network.intra_node_gbps (GB/s per GPU "
                    "per direction), network.inter_node_latency_us, network.intra_node_latency_us, "
                    "cluster.gpus_per_node; or the host: host.cpu_speed (2: its CPU side twice as fast; "
                    "'dpro-replay host-speed' measures it between two captures) (repeatable)")
      ->allow_extra_args(false);
  if (flags == Flags::kSweep)
    replay.add_option("--ranks", ranks_list_, "Data-parallel job sizes to sweep, e.g. 8,16,64 (each 1 to 2^20)");
  else
    replay.add_option("--ranks", comm_.ranks,
                      "Data-parallel scale-out/in: replay the job on N ranks (1 to 2^20). Below the trace's ranks,\n"
                      "the what-if (its rows, job row, JSON and --timeline) is the job of the first N ranks");
  replay.add_option("--bucket-mb", comm_.bucket_mb, "Fuse consecutive all-reduces into gradient buckets of at most X MB");
  replay.add_option("--compress", compress_,
                    "Compress the gradient all-reduces (buckets with --bucket-mb): none, fp16, bf16, topk[:RATIO],\n"
                    "randomk[:RATIO], dgc[:RATIO], efsignsgd, powersgd[:RANK] (ratio default 0.01, rank 4); several\n"
                    "separated by ',' give a method per bucket in backward order (later buckets: none)");
  replay.add_option("--comm-sizes", comm_.comm_sizes,
                    "Host execution traces giving NCCL message sizes: a directory, or one file per rank (repeatable)")
      ->allow_extra_args(false);
  // A search decides these, and a plan carries no samples: kept, so that conditions() can say so,
  // but out of the help.
  if (flags == Flags::kConditions)
    for (const char* name : {"--device-samples", "--origin-samples", "--pricer", "--shares", "--precision-dtype", "--precision-classes",
                             "--bucket-mb", "--compress"})
      replay.get_option(name)->group("");
}

void WhatIfFlags::check_pricer() const {
  if (!costmodel::parse_pricer_kind(device_.pricer))
    throw InputError("", "--pricer " + device_.pricer, std::string("is ") + costmodel::kPricerKindNames);
  if (!pricer_default() && !device_enabled())
    throw InputError("", "--pricer " + device_.pricer, "prices a --device re-timing: give --device");
}

std::vector<whatif::Rewrite> WhatIfFlags::rewrites() const {
  check_pricer();
  std::vector<whatif::Rewrite> out;
  std::vector<std::string> cluster;
  if (auto host = whatif::host_retime_from_settings(comm_.settings, &cluster)) out.emplace_back(*host);
  if (device_enabled()) {
    whatif::DeviceRetime device = device_;
    device.device_profile = device_profile_;
    out.emplace_back(std::move(device));
  }
  if (precision_enabled()) {
    // After a --device re-timing the kernels' times are the target's: the lowering is priced there.
    whatif::Precision precision;
    precision.dtype = precision_dtype_;
    if (!precision_classes_.empty()) precision.classes = precision_classes_;
    precision.device_dir = device_.device_dir;
    precision.device = device_.device;
    precision.device_profile = device_profile_;
    out.emplace_back(std::move(precision));
  }
  if (comm_enabled()) {
    whatif::CommRetime comm = comm_;
    comm.settings = std::move(cluster);
    if (!compress_.empty()) {
      comm.compression = comm::parse_compression(compress_);
      comm.compression->devices_dir = device_.device_dir;
      comm.compression->device_profile = device_profile_;
      comm.compression->device = device_.device;
    }
    out.emplace_back(std::move(comm));
  }
  return out;
}

optimizer::Conditions WhatIfFlags::conditions() const {
  if (comm_.bucket_mb)
    throw InputError("", "--bucket-mb", "is what the buckets strategy decides; a plan or a search takes no bucket size");
  if (!compress_.empty())
    throw InputError("", "--compress", "is what the compression strategy decides; a plan or a search takes no method");
  if (precision_enabled())
    throw InputError("", "--precision-dtype", "is what the precision strategy decides; a plan or a search takes no dtype");
  if (!device_.samples_path.empty())
    throw InputError("", "--device-samples", "cannot be part of a plan or a search (not supported yet)");
  if (!device_.origin_samples_path.empty())
    throw InputError("", "--origin-samples", "cannot be part of a plan or a search (not supported yet)");
  check_pricer();
  if (!pricer_default())
    throw InputError("", "--pricer " + device_.pricer, "cannot be part of a plan or a search (not supported yet)");
  optimizer::Conditions c;
  c.device = device_.device;
  c.origin_device = device_.origin_device;
  c.cluster = comm_.cluster;
  c.origin_cluster = comm_.origin_cluster;
  c.settings = comm_.settings;
  c.comm_sizes = comm_.comm_sizes;
  c.ranks = comm_.ranks;
  return c;
}

namespace {
std::vector<std::string> split_values(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}
}  // namespace

std::vector<whatif::SweepAxis> WhatIfFlags::sweep_axes() const {
  std::vector<whatif::SweepAxis> axes;
  auto add = [&](const std::string& name, const std::string& flag, const std::string& text) {
    std::vector<std::string> values = split_values(text);
    for (const std::string& v : values)
      if (v.empty()) throw InputError("", flag + " " + text, "an empty value: separate the values with one ','");
    if (values.size() > 1) axes.push_back({name, std::move(values)});
  };
  if (!device_.device.empty()) add("device", "--device", device_.device);
  if (!ranks_list_.empty()) add("ranks", "--ranks", ranks_list_);
  for (const std::string& s : comm_.settings) {
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos) continue;  // the rewrite says what is wrong with it
    add(s.substr(0, eq), "--set", s.substr(eq + 1));
  }
  return axes;
}

WhatIfFlags WhatIfFlags::at(const whatif::SweepPoint& point) const {
  WhatIfFlags f = *this;
  for (const auto& [name, value] : point) {
    if (name == "device") {
      f.device_.device = value;
    } else if (name == "ranks") {
      f.ranks_list_ = value;
    } else {
      for (std::string& s : f.comm_.settings)
        if (s.compare(0, name.size() + 1, name + "=") == 0) s = name + "=" + value;
    }
  }
  if (!f.ranks_list_.empty()) {
    std::size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(f.ranks_list_, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != f.ranks_list_.size() || n < 1 || n > (1 << 20))
      throw InputError("", "--ranks " + f.ranks_list_, "a job size is a whole number from 1 to 2^20");
    f.comm_.ranks = static_cast<int>(n);
  }
  return f;
}

optimizer::ResourcePaths WhatIfFlags::paths() const {
  return {device_.model_path, device_.device_dir, comm_.clusters_dir, device_profile_};
}

InputError with_flag(const OptionError& e) {
  std::string flag = "--" + e.option();
  for (char& c : flag)
    if (c == '_') c = '-';
  return InputError(e.file(), flag + (e.value().empty() ? "" : " " + e.value()), e.message());
}

}  // namespace dpro::cli
