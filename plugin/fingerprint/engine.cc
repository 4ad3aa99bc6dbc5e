// Interim engine: fingerprints off (every operation left kFpNone). Replaced by the real
// implementation (issue 3); kept only so the event layer links while both are built.
#include "plugin/fingerprint/engine.h"

#include <new>

namespace scout::fp {

struct CommFp {};
struct Engine::Impl {};

Engine* Engine::create(const config::Config&, abi::Logger) { return new (std::nothrow) Engine(); }
void Engine::destroy(Engine* e) { delete e; }
CommFp* Engine::comm_init(uint64_t, int, int, shm::CommHeader*) { return nullptr; }
void Engine::comm_fini(CommFp*) {}
void Engine::on_launch_start(CommFp*, void*) {}
void Engine::on_launch_stop(CommFp*, void*) {}
void Engine::on_op_enqueued(CommFp*, shm::OpRecord*, uint64_t, const OpInfo&) {}
void Engine::on_group_end() {}
void Engine::on_op_complete(CommFp*, shm::OpRecord*, uint64_t, uint64_t) {}
bool Engine::gpu_available() const { return false; }

}  // namespace scout::fp
