// dpro-exec calibrate: measures the device (executor/calibration.h) and writes its profile.
#include <cstdio>
#include <optional>
#include <unistd.h>

#include "commands.h"
#include "executor/calibration.h"
#include "exec_input.h"

namespace dpro::exec_cli {
namespace {

class CalibrateCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "calibrate",
        "Measure the GPU and write its device profile (JSON, src/hw/device_profile.h): empty-kernel\n"
        "launch cost (GPU and host), copy bandwidths (h2d, d2h, d2d), GEMM throughput per dtype and math mode\n"
        "(fp32, TF32, fp16, bf16) at square and transformer shapes, cast and compression kernel costs, and how\n"
        "closely the stand-in kernel meets a requested duration (5 us to 5 ms). Each figure: the median of\n"
        "--repetitions timed runs after warm-up. 'dpro-replay replay|optimize --device-profile FILE' prices\n"
        "precision and compression on this GPU with it (docs/executor.md).");
    sub->add_option("--out", out_, "the profile file to write ('-' = stdout)")->required();
    sub->add_option("--repetitions", repetitions_, "timed runs per figure (the median is kept; 1 to 1000)")
        ->check(CLI::Range(1, 1000));
    sub->add_flag("--quick", quick_,
                  "a short calibration (3 repetitions, copies up to 1 MiB, 1024^3 GEMMs, kernels at 64K and 1M\n"
                  "elements, stand-ins at 5 us, 100 us and 1 ms): seconds, for a first look or a test");
    device_.add_to(*sub, "calibrate the fake device (no GPU; its figures are its own formulas: checks the flow)");
    sub->add_flag("--force", force_, "overwrite an existing profile file");
    sub->add_flag("-q,--quiet", quiet_, "no progress on stderr");
    return sub;
  }

  int run() override {
    executor::CalibrationOptions options;
    if (quick_) {
      options.repetitions = 3;
      options.copy_bytes = {4 << 10, 64 << 10, 1 << 20};
      options.gemm_shapes = {{1024, 1024, 1024, 1}};
      options.kernel_elements = {1 << 16, 1 << 20};
      options.standin_durations = {5'000, 100'000, 1'000'000};
    }
    if (repetitions_) options.repetitions = *repetitions_;
    executor::validate(options);
    std::unique_ptr<executor::Device> device = device_.open();
    if (!device) {
      std::fputs(kNoCudaExecutor, stderr);
      return 2;
    }
    const bool tty = isatty(STDERR_FILENO);
    executor::CalibrationProgress progress;
    if (!quiet_)
      progress = [tty](const executor::CalibrationStep& s) {
        std::fprintf(stderr, tty ? "\r[%d/%d] %s\033[K" : "[%d/%d] %s\n", s.index + 1, s.total, s.what.c_str());
      };
    const executor::DeviceProfile profile = executor::calibrate(*device, options, progress);
    if (!quiet_ && tty) std::fprintf(stderr, "\n");
    executor::write_device_profile(out_, profile, force_);
    if (!quiet_ && out_ != "-") std::fprintf(stderr, "device profile of %s written to %s\n", profile.device.c_str(), out_.c_str());
    return 0;
  }

 private:
  std::string out_;
  DeviceFlags device_;
  std::optional<int> repetitions_;
  bool quick_ = false, force_ = false, quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> make_calibrate_command() { return std::make_unique<CalibrateCommand>(); }

}  // namespace dpro::exec_cli
