// Test helper: saves run records into a store as fast as it can, printing "saved N" after each commit,
// until killed. tst_run_store kills it mid-write and checks that every committed run is intact.
#include <cstdio>
#include <string>

#include "core/results/RunStore.h"
#include "core/results/Summary.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: tewb_store_writer DATABASE\n");
        return 2;
    }
    tewb::RunStore store(argv[1]);
    for (int n = 1;; ++n) {
        tewb::RunRecord record;
        record.id = tewb::make_run_id();
        record.created_at = tewb::utc_timestamp_now();
        record.config.name = "writer run " + std::to_string(n);
        record.execution.device = "cpu";
        record.execution.implementation = "test";
        for (int step = 1; step <= 2000; ++step) {  // large enough that a kill often lands inside a write
            record.steps.push_back(
                {step, step <= 10 ? tewb::Phase::Warmup : tewb::Phase::Timed, 5.0, 1.0, 100u, 1.0, 1.0 * step});
        }
        record.status = tewb::RunStatus::Finished;
        record.summary = tewb::summarize(record.steps, record.config, record.execution);
        store.save(record);
        std::printf("saved %d\n", n);
        std::fflush(stdout);
    }
}
