//! The fields the fast path reads: a slot for each, and the slot each
//! spelling of a key names.

// The fields the slow path reads, one slot per field whatever its spelling.
pub(super) const T_CASE: usize = 0;
pub(super) const T_VARIANT_ID: usize = 1;
pub(super) const T_LABEL: usize = 2;
pub(super) const T_FAMILY: usize = 3;
pub(super) const T_TRANSFORMATION: usize = 4;
pub(super) const T_CONTRACT: usize = 5;
pub(super) const T_SCHEMA: usize = 6;
pub(super) const T_DATASET: usize = 7;
pub(super) const T_POLICY: usize = 8;
pub(super) const T_REVIEW: usize = 9;
pub(super) const T_ACTION: usize = 10;
pub(super) const T_EXPECTATION: usize = 11;
pub(super) const T_MARGIN: usize = 12;
pub(super) const T_ALLOWED: usize = 13;
pub(super) const T_SOURCE: usize = 14;
pub(super) const T_VARIANT: usize = 15;
pub(super) const T_SOURCE_ROUTE: usize = 16;
pub(super) const T_VARIANT_ROUTE: usize = 17;
pub(super) const T_PASSED: usize = 18;
pub(super) const T_REASONS: usize = 19;
pub(super) const T_TIMESTAMP: usize = 20;
pub(super) const T_MODEL: usize = 21;
pub(super) const T_SETTINGS: usize = 22;
pub(super) const T_REPETITION: usize = 23;
pub(super) const N_TOP: usize = 24;

/// The slot of a top-level key (the spellings of `record::KNOWN_TOP`).
pub(super) fn top_slot(k: &[u8]) -> Option<usize> {
    Some(match k {
        b"case_id" | b"caseId" => T_CASE,
        b"variant_id" | b"variantId" => T_VARIANT_ID,
        b"label" => T_LABEL,
        b"family" => T_FAMILY,
        b"transformation" => T_TRANSFORMATION,
        b"contract_version" | b"contractVersion" => T_CONTRACT,
        b"state_schema_version" | b"stateSchemaVersion" => T_SCHEMA,
        b"dataset_version" | b"datasetVersion" => T_DATASET,
        b"policy" => T_POLICY,
        b"review_threshold" | b"reviewThreshold" => T_REVIEW,
        b"action_threshold" | b"actionThreshold" => T_ACTION,
        b"expectation" => T_EXPECTATION,
        b"minimum_boundary_margin" | b"minimumBoundaryMargin" => T_MARGIN,
        b"allowed_changes" | b"allowedChanges" => T_ALLOWED,
        b"source" => T_SOURCE,
        b"variant" => T_VARIANT,
        b"sourceRoute" | b"source_route" => T_SOURCE_ROUTE,
        b"variantRoute" | b"variant_route" => T_VARIANT_ROUTE,
        b"passed" => T_PASSED,
        b"reasons" => T_REASONS,
        b"timestamp" => T_TIMESTAMP,
        b"model_id" | b"modelId" => T_MODEL,
        b"settings_id" | b"settingsId" => T_SETTINGS,
        b"repetition" => T_REPETITION,
        _ => return None,
    })
}

pub(super) const S_QUESTION: usize = 0;
pub(super) const S_STATE: usize = 1;
pub(super) const S_RESPONSE: usize = 2;
pub(super) const S_PROBABILITY: usize = 3;
pub(super) const S_CONFIDENCE: usize = 4;
pub(super) const S_ROUTE: usize = 5;
pub(super) const S_OUTCOME: usize = 6;
pub(super) const S_ERROR: usize = 7;
pub(super) const S_LATENCY: usize = 8;
pub(super) const S_DECISION: usize = 9;
pub(super) const N_SIDE: usize = 10;

/// The slot of a member of `source` or `variant` (see `record::side_from`).
pub(super) fn side_slot(k: &[u8]) -> Option<usize> {
    Some(match k {
        b"question" | b"prompt" => S_QUESTION,
        b"state" | b"payload" => S_STATE,
        b"response" | b"assessment" => S_RESPONSE,
        b"probability" | b"noul" | b"p" => S_PROBABILITY,
        b"confidence" | b"c" => S_CONFIDENCE,
        b"route" => S_ROUTE,
        b"outcome" | b"status" => S_OUTCOME,
        b"error" | b"error_message" | b"errorMessage" => S_ERROR,
        b"latency_ms" | b"latencyMs" | b"latency" => S_LATENCY,
        b"decision" => S_DECISION,
        _ => return None,
    })
}

/// The slot of a member of a side's `response`.
pub(super) fn response_slot(k: &[u8]) -> Option<usize> {
    Some(match k {
        b"probability" | b"noul" | b"p" => 0,
        b"confidence" | b"c" => 1,
        _ => return None,
    })
}

/// The slot of a member of `policy`.
pub(super) fn policy_slot(k: &[u8]) -> Option<usize> {
    Some(match k {
        b"review_threshold" | b"reviewThreshold" | b"review" => 0,
        b"action_threshold" | b"actionThreshold" | b"action" => 1,
        _ => return None,
    })
}

pub(super) const E_KIND: usize = 0;
pub(super) const E_MAX_P: usize = 1;
pub(super) const E_MAX_C: usize = 2;
pub(super) const E_SAME_ROUTE: usize = 3;
pub(super) const E_MOVEMENT: usize = 4;
pub(super) const E_ROUTES: usize = 5;
pub(super) const N_EXP: usize = 6;

/// The slot of a member of `expectation` (see `record::expectation_from`).
pub(super) fn expectation_slot(k: &[u8]) -> Option<usize> {
    Some(match k {
        b"kind" | b"type" => E_KIND,
        b"max_probability_drift"
        | b"maximumNoulDrift"
        | b"maximumProbabilityDrift"
        | b"maxProbabilityDrift"
        | b"max_noul_drift" => E_MAX_P,
        b"max_confidence_drift" | b"maximumConfidenceDrift" | b"maxConfidenceDrift" => E_MAX_C,
        b"require_same_route" | b"requireSameRoute" => E_SAME_ROUTE,
        b"permitted_probability_movement" | b"permittedProbabilityMovement" => E_MOVEMENT,
        b"allowed_routes" | b"allowedRoutes" => E_ROUTES,
        _ => return None,
    })
}
