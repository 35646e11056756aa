"""The profile pass: run (torch workloads through the worker), shell (Nsight), check
(predictions against the measured profile), text (its words and tables) and record (its
section of the decision record); base holds what they share."""
