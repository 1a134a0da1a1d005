#pragma once
// Fixture of the layering test: the graph header the core fixture includes.
#include "core/clock.h"
