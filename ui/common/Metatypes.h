#pragma once

#include <QMetaType>

#include "core/results/RunRecord.h"
#include "core/config/RunConfig.h"

// Core's value types cross from the run thread to the GUI thread in queued signals.
Q_DECLARE_METATYPE(tewb::RunConfig)
Q_DECLARE_METATYPE(tewb::StepMetrics)
Q_DECLARE_METATYPE(tewb::RunRecord)
