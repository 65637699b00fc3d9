"""SovSim agents: the LLM and scripted agents (:mod:`.agent`), their prompts (:mod:`.prompts`,
templates in ``prompts/``), decision schemas (:mod:`.schemas`) and scripted policies
(:mod:`.scripted`)."""
