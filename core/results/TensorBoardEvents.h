#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/results/AtomicFile.h"
#include "core/results/RunRecord.h"

// Runs as TensorBoard event files, so `tensorboard --logdir DIR` shows their scalars beside the user's other
// experiments. The format, written here from its definition rather than through TensorFlow:
//   - a file is a sequence of TFRecords: the payload's length (uint64, little endian), the masked CRC-32C of those
//     8 bytes, the payload, the masked CRC-32C of the payload (mask: rotate right by 15, add 0xa282ead8);
//   - each payload is a tensorflow.Event protocol buffer: wall_time (field 1, double), step (2, int64),
//     file_version (3, string; the first event says "brain.Event:2") or summary (5): a Summary of Values, each a tag
//     (1, string) and a simple_value (2, float).
namespace tewb {

std::uint32_t crc32c(std::string_view bytes);
std::uint32_t masked_crc32c(std::string_view bytes);
// One TFRecord around `payload`.
std::string tfrecord(std::string_view payload);

struct TensorBoardScalar {
    std::string tag;
    float value = 0;
};
// One Event's bytes: the file-version event, and a step's scalars.
std::string file_version_event(double wall_time);
std::string scalars_event(double wall_time, std::int64_t step, const std::vector<TensorBoardScalar>& scalars);

// A step's scalars as exported: loss, val_loss (steps that evaluated), step_ms, tokens_per_s, peak_memory_mib, and
// for FP8 runs each slot's fp8_amax/<module>/<role> and fp8_scale/<module>/<role>. Non-finite values are left out
// (TensorBoard would draw them as gaps at best).
std::vector<TensorBoardScalar> step_scalars(const RunRecord& run, const StepMetrics& step);

// A run's whole event file: the version event, then one event per step at the run's start time plus the step's
// elapsed time.
std::string tensorboard_events(const RunRecord& run);

// Where a run's events go inside `dir`: a folder per run, named from the run's name and its id (so repeats of one
// name stay apart and the same run exported again replaces its own file), holding
// events.out.tfevents.<start time>.te-workbench.
std::filesystem::path tensorboard_event_path(const RunRecord& run, const std::filesystem::path& dir);

// The event files of an export, their folders made and every file checked, ready to write.
struct TensorBoardFiles {
    std::vector<OutputRequest> files;  // one per run, in run order
};

// Plans each run's event file under `dir`, makes the folders that are missing and checks the event files and
// `others` (the command's other outputs) in one check_outputs: never onto the run store `store`, a token file being
// trained on, the executable, standard output's file, nor two outputs onto one file. Throws ConfigError, naming
// `label` (the flag, or the window's words), when `dir` is not a folder, two runs would share a folder (the same
// run twice) or a check refuses; the folders it made are then removed again, so nothing is left behind.
TensorBoardFiles prepare_tensorboard(const std::vector<RunRecord>& runs, const std::filesystem::path& dir,
                                     const std::string& label, const std::vector<OutputRequest>& others,
                                     const std::optional<std::filesystem::path>& store);
// Writes the prepared files (write_file_atomically; DataError when writing fails); returns their paths.
std::vector<std::filesystem::path> write_tensorboard(const std::vector<RunRecord>& runs, const TensorBoardFiles& files);
// Both, for an export with no other outputs.
std::vector<std::filesystem::path> write_tensorboard(const std::vector<RunRecord>& runs, const std::filesystem::path& dir,
                                                     const std::string& label,
                                                     const std::optional<std::filesystem::path>& store);

}  // namespace tewb
