// The default workload of `hookhost run`: linear regression by mini-batch SGD on a CSV file, so
// the host runs a real job out of the box (by default R's mtcars, predicting mpg from drat and cyl,
// from a copy of data/mtcars.csv compiled into the library).
//
// Model and step:
//  - prediction = w·x + b; the loss is the mean squared error over the batch, computed with the
//    weights *before* the update (the first step reports the initial loss, weights start at 0).
//  - Plain gradient descent on w and b with the configured learning rate, or with the value a hook
//    feeds as `learning_rate` for that one step.
//  - Features are standardised once over the whole file (mean 0, population sd 1) unless
//    `standardize` is off; a constant column is only centred.
// Batches (one process; see make_linreg_session for several):
//  - Epoch e visits the rows in a permutation drawn by a Fisher–Yates shuffle from
//    std::mt19937_64(shuffle_seed + e) (our own shuffle, not std::shuffle, so every standard
//    library yields the same order), in consecutive batches of batch_size rows.
//  - The last batch of an epoch may be partial and is used as is (like a TF input_fn without
//    drop_remainder): steps per epoch = ceil(rows / batch_size).
//  - With epochs > 0 the run after the last batch of the last epoch returns end_of_data.
// State (save_state/restore_state): a text block with the global step, epoch, position in the
// epoch, the epoch's permutation, the weights and the bias, so a resumed job continues exactly.
#pragma once

#include <memory>

#include "hookhost/host/communicator.hpp"
#include "hookhost/host/params.hpp"
#include "hookhost/host/plugin_metadata.hpp"
#include "hookhost/host/session.hpp"

namespace hookhost {

// The workload's parameter schema (id "linreg"), validated like a plugin's:
// resolve_params(linreg_schema(), "workload", raw).
const PluginMetadata& linreg_schema();

// Builds the session from parameters resolved against linreg_schema(). Throws ConfigError for an
// out-of-range value (naming the key) and for a bad CSV (naming the file and the problem).
// With a communicator the session is one replica of a data-parallel job: each process takes every
// size-th row of each global batch from its rank on, the gradients are summed with one allreduce
// per step, and every process makes the same update (batch_size stays the global batch).
std::unique_ptr<Session> make_linreg_session(const ResolvedParams& params,
                                             std::shared_ptr<Communicator> comm = nullptr);

}  // namespace hookhost
