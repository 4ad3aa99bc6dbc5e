// The spelling of a GPU's UUID everywhere scout names a GPU (records, findings, replay):
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", nvidia-smi's, from the 16 bytes of the driver's
// CUuuid (cuDeviceGetUuid).
#pragma once

#include <string>

namespace scout::shm {

// Into `out` (at most `cap` bytes with the terminating NUL; 41 are enough); no allocation, so
// the plugin may call it inside the training process. Nothing is written when cap is 0.
void format_gpu_uuid(const unsigned char bytes[16], char* out, unsigned cap);
// As a string.
std::string gpu_uuid_text(const unsigned char bytes[16]);

}  // namespace scout::shm
