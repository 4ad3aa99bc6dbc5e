// Call recordings: every profiler callback NCCL makes, with its descriptor fields, thread and
// time, in a compact binary file per process (SCOUT_RECORD_CALLS=PATH -> PATH.<pid>.bin).
// Recordings made under real NCCL on a GPU become test fixtures: test/support/call_replay
// drives the plugin from them and the resulting records are compared exactly.
// docs/call-recording.md describes the format for people; this header is the definition.
//
// File = FileHeader, then entries back to back. All integers little-endian; entries are
// byte-packed (read them with memcpy). Every entry starts with EntryHeader; `size` counts the
// whole entry including the header, so a reader can skip kinds it does not know.
#pragma once

#include <cstdint>

namespace scout::rec {

constexpr char kFileMagic[8] = {'S', 'C', 'O', 'U', 'T', 'R', 'E', 'C'};
constexpr uint32_t kFileVersion = 1;

#pragma pack(push, 1)

struct FileHeader {       // 128 bytes
  char magic[8];          // "SCOUTREC"
  uint32_t version;       // kFileVersion
  uint32_t header_bytes;  // sizeof(FileHeader)
  int32_t pid;
  uint32_t reserved0;
  int64_t start_ns;  // CLOCK_REALTIME when recording started; entry times are relative
  char host[64];     // gethostname()
  char plugin_version[32];
};
static_assert(sizeof(FileHeader) == 128);

enum EntryKind : uint8_t {
  kEntryString = 1,    // defines a string id (NCCL's static strings, commName)
  kEntryInit = 2,      // init(...) and what it returned
  kEntryStart = 3,     // startEvent(...) and the handle it returned
  kEntryStop = 4,      // stopEvent(handle)
  kEntryState = 5,     // recordEventState(handle, state, args)
  kEntryFinalize = 6,  // finalize(context)
};

struct EntryHeader {  // 16 bytes
  uint8_t kind;       // EntryKind
  uint8_t abi;        // ABI version of the call: 4, 5 or 6
  uint16_t size;      // bytes of the whole entry
  uint32_t thread;    // dense thread id: 1, 2, ... in order of first appearance
  int64_t t_ns;       // CLOCK_REALTIME - FileHeader::start_ns
};
static_assert(sizeof(EntryHeader) == 16);

// String ids: 0 means NULL. Defined once, before first use.
struct StringEntry {  // followed by `len` bytes (no NUL)
  EntryHeader h;
  uint32_t id;
  uint16_t len;
};

struct InitEntry {
  EntryHeader h;
  uint64_t context_out;  // value the plugin stored in *context (opaque)
  uint64_t comm_hash;
  uint32_t name;  // string id of commName
  int32_t nnodes;
  int32_t nranks;
  int32_t rank;
  int32_t mask_in;   // *eActivationMask before the call
  int32_t mask_out;  // after
  int32_t result;
};

// Descriptor fields of a startEvent, flattened. Pointers NCCL owns (buffers, streams) are kept
// as raw values; handles (parentObj, parentGroup) are the raw values the plugin returned
// earlier, so a replayer can map them to the handles of the plugin under test.
struct StartEntry {
  EntryHeader h;
  uint64_t context;     // context argument (raw)
  uint64_t handle_out;  // value the plugin stored in *eHandle (0 = NULL)
  uint64_t type;        // event type bit
  uint64_t parent;      // parentObj (raw)
  int32_t rank;
  int32_t result;
  // Union of the type-specific fields (meaning depends on `type`, see docs/call-recording.md):
  uint64_t u64[4];  // seqNumber/count/pTimer/stream/buffers/... by type
  uint64_t ptr[3];  // sendBuff, recvBuff (or buff), parentGroup (raw)
  uint32_t str[4];  // func, datatype, algo, proto string ids
  int32_t i32[6];   // root/peer, groupDepth, pid, channelId, nSteps, chunkSize/isSend...
  uint8_t u8[8];    // nChannels, nWarps, graphCaptured, ...
};

struct StopEntry {
  EntryHeader h;
  uint64_t handle;
  int32_t result;
};

struct StateEntry {
  EntryHeader h;
  uint64_t handle;
  int32_t state;
  uint8_t has_args;  // 0: args pointer was NULL
  uint8_t pad[3];
  uint64_t arg;  // the 8-byte state-args union
  int32_t result;
};

struct FinalizeEntry {
  EntryHeader h;
  uint64_t context;
  int32_t result;
};

#pragma pack(pop)

}  // namespace scout::rec
