"""AdmissionReview in and out: parse, decide (/validate, /mutate), respond."""
