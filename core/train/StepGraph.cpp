#include "core/train/StepGraph.h"

#include <stdexcept>

#include "core/common/Error.h"

#ifdef TEWB_TORCH_HAS_CUDA
#include <optional>
#include <vector>

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#endif

namespace tewb {

GraphDecision decide_cuda_graph(const RunConfig& resolved) {
#ifdef TEWB_TORCH_HAS_CUDA
    return decide_cuda_graph(resolved, true);
#else
    return decide_cuda_graph(resolved, false);
#endif
}

#ifdef TEWB_TORCH_HAS_CUDA
namespace {

class CudaStepGraph final : public StepGraph {
public:
    explicit CudaStepGraph(const c10::Device& device)
        : device_(device),
          origin_(c10::cuda::getCurrentCUDAStream(device.index())),
          side_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {
        wait(side_, origin_);  // model, optimizer state and data were made on the origin stream
        guard_.emplace(side_);
    }

    ~CudaStepGraph() override {
        guard_.reset();
        wait(origin_, side_);  // later users of the run's tensors on the origin stream see the last step
    }

    void capture(const std::function<void()>& step) override {
        graph_ = std::make_unique<at::cuda::CUDAGraph>(/*keep_graph=*/true);
        try {
            graph_->capture_begin();
            try {
                step();
            } catch (...) {
                try {
                    graph_->capture_end();  // leave capture mode so the stream is usable again
                } catch (...) {
                }
                throw;
            }
            graph_->capture_end();
            graph_->instantiate();
        } catch (const c10::Error& e) {
            graph_.reset();
            const std::string text = e.what_without_backtrace();
            throw Error("CUDA graph capture of the training step failed: " + text.substr(0, text.find('\n')) +
                        "; run with --cuda-graph off");
        }
        pool_bytes_.reset();
        try {  // not every allocator backend keeps segments (cudaMallocAsync): then the pool is not measured
            const auto snapshot = c10::cuda::CUDACachingAllocator::snapshot({0, 0}, /*include_traces=*/false);
            std::uint64_t bytes = 0;
            for (const auto& segment : snapshot.segments) {
                if (segment.owner_private_pool_id == graph_->pool()) bytes += segment.total_size;
            }
            pool_bytes_ = bytes;
        } catch (const c10::Error&) {
        }
        cudaGraph_t graph = graph_->raw_cuda_graph();
        std::size_t count = 0;
        if (cudaGraphGetNodes(graph, nullptr, &count) == cudaSuccess) {
            std::vector<cudaGraphNode_t> nodes(count);
            if (cudaGraphGetNodes(graph, nodes.data(), &count) == cudaSuccess) {
                kernel_nodes_ = 0;
                for (cudaGraphNode_t node : nodes) {
                    cudaGraphNodeType type{};
                    if (cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel) ++kernel_nodes_;
                }
            }
        }
    }

    void replay() override { graph_->replay(); }
    bool captured() const override { return graph_ != nullptr; }
    int kernel_nodes() const override { return kernel_nodes_; }
    std::optional<std::uint64_t> pool_bytes() const override { return pool_bytes_; }

private:
    static void wait(const c10::cuda::CUDAStream& waiter, const c10::cuda::CUDAStream& on) {
        at::cuda::CUDAEvent done;
        done.record(on);
        done.block(waiter);
    }

    c10::Device device_;
    c10::cuda::CUDAStream origin_;
    c10::cuda::CUDAStream side_;
    std::optional<c10::cuda::CUDAStreamGuard> guard_;
    std::unique_ptr<at::cuda::CUDAGraph> graph_;
    int kernel_nodes_ = 0;
    std::optional<std::uint64_t> pool_bytes_;
};

}  // namespace

std::unique_ptr<StepGraph> make_step_graph(const c10::Device& device) {
    return std::make_unique<CudaStepGraph>(device);
}
#else
std::unique_ptr<StepGraph> make_step_graph(const c10::Device&) {
    throw std::logic_error("a CUDA graph was asked for, but this build's LibTorch has no CUDA");
}
#endif

}  // namespace tewb
