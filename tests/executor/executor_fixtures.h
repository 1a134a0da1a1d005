#pragma once
// What the executor tests share: a bundled trace as a workload and its schedule run on the fake.
#include <string>

#include "../whatif/workload_fixtures.h"
#include "executor/fake_device.h"
#include "executor/runner.h"
#include "executor/schedule.h"

namespace dpro::test {

struct FakeRun {
  executor::Schedule schedule;
  executor::FakeDevice device;
  executor::RunResult result;
};

inline void run_on_fake(FakeRun& run, int iterations) {
  executor::RunOptions options;
  options.iterations = iterations;
  run.result = executor::run_schedule(run.device, run.schedule, options);
}

}  // namespace dpro::test
