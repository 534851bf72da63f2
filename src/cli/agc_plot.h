// PNG plot of the AGC observables (gnuplot, pngcairo): one panel per observable with the
// nominal histogram and the JES up/down variations as step lines.
#pragma once

#include <string>

#include "analysis/agc_pass.h"
#include "base/result.h"

namespace ferry::cli {

// Writes out_png. Runs `gnuplot` from PATH on a script and data in a temporary directory
// (removed afterwards), bounded to 60 s. kNotFound when gnuplot is not installed.
Status PlotAgc(const analysis::AgcReport& report, const std::string& out_png);

}  // namespace ferry::cli
