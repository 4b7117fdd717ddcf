"""Framework integrations: leaves over the public facade (``kenning.Kenning``), each needing its
framework's package (an extra of kenning, named in the ``ConfigurationError`` when missing).

- ``kenning.integrations.langgraph``: ``KenningStore``, a LangGraph ``BaseStore`` (LangMem's
  memory tools work on it) — ``pip install 'kenning[langgraph]'``
- ``kenning.integrations.openai_agents``: ``KenningSession`` and ``memory_tools`` for the
  OpenAI Agents SDK — ``pip install 'kenning[openai-agents]'``
- ``kenning.integrations.pydantic_ai``: ``memory_toolset`` for Pydantic AI —
  ``pip install 'kenning[pydantic-ai]'``
- ``kenning.integrations.crewai``: ``KenningStorage`` and ``memory``, CrewAI's unified
  ``Memory`` stored in kenning — ``pip install 'kenning[crewai]'`` (an environment of its own:
  crewai pins ``mcp<2``)
- ``kenning.integrations.agent``: ``with_memory``, a decorator giving any agent function the
  user's context and recording its turns (no extra)

docs/integrations.md has a runnable example of each, and the MCP setup of Claude Code and
Claude Desktop.
"""
