#pragma once
// Text and JSON of what dpro-exec prints: a schedule's summary and a run's measurements.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "executor/runner.h"
#include "executor/schedule.h"
#include "executor/validation.h"

namespace dpro::exec_cli {

nlohmann::json schedule_json(const executor::Schedule& s, const std::vector<std::string>& notes);
std::string schedule_text(const executor::Schedule& s, const std::vector<std::string>& notes);

nlohmann::json run_json(const executor::Schedule& s, const executor::RunResult& r);
std::string run_text(const executor::Schedule& s, const executor::RunResult& r);

// validate: measured vs predicted (step, every op class, every stream), errors in %.
nlohmann::json validation_json(const executor::Validation& v, const std::vector<std::string>& notes);
std::string validation_text(const executor::Validation& v, const std::vector<std::string>& notes);

}  // namespace dpro::exec_cli
