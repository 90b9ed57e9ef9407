"""training_mix: the plan, the draws, token counts and decontamination against eval sets."""
