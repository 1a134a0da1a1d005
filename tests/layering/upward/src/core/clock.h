#pragma once
// Fixture of the layering test: a core header that includes a graph header (a lower module
// including a higher one). check_layers.py must report it.
#include "graph/dfg.h"
