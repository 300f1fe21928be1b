// Reads HotSpot's -XX flags from inside the process, without Java code and without the
// java.management module: through the VM's self-description for the Serviceability Agent
// (the gHotSpotVMStructs/gHotSpotVMTypes tables libjvm.so exports), which names the flag table
// (JVMFlag::flags, JVMFlag::numFlags) and the offsets of each entry's name and value address. The
// value read is the flag itself, whatever set it (command line, JAVA_TOOL_OPTIONS, a flags file,
// ergonomics).
#pragma once

#include <optional>
#include <string_view>

namespace fasthprof {

// The value of the bool flag `name` (e.g. "DisableAttachMechanism"), or nothing when the VM is not
// HotSpot, does not describe its flags, or has no such flag. Reads memory only; any thread, at any
// time after the VM's flags are parsed (Agent_OnLoad included).
std::optional<bool> hotspot_bool_flag(std::string_view name);

}  // namespace fasthprof
