// The built-in training schemes' declarations, one file each (nodes/schemes/*Scheme.cpp);
// SchemeRegistry adds them in the order listings show. A new scheme is a new file with one
// such function, declared here and added in SchemeRegistry's constructor.
#pragma once

#include "nodes/schemes/SchemeRegistry.h"

namespace gradwire {

SchemeInfo ring_scheme();
SchemeInfo parameter_server_scheme();
SchemeInfo gossip_scheme();
SchemeInfo leader_scheme();
SchemeInfo local_scheme();

}  // namespace gradwire
