"""What the tests share and do not test: builders, fakes, local servers, a wire to serve.

Nothing here is collected by pytest (no ``test_*`` modules); the test packages
import from it. The package says "support" once, so its modules are named after
what they support (``scratch``, not ``scratch_support``):

- ``helpers``: ``T0``, ``at``, ``node``, ``snapshot`` and the other small builders.
- ``graphs``: a deterministic LangGraph workflow that writes the substrate.
- ``substrate``: random but valid substrate runs, for property tests.
- ``rewrite``: graphs in a given state and proposals, for the rewrite tests.
- ``scratch``: the scratch tool's rejected-path corpus, a recording store, binding.
- ``embedding``: a deterministic fake embedder.
- ``fencing``: take a thread's writer lock away from its holder (also ``tools/reliability*.py``).
- ``conformance``: a saver's sync methods behind the async API the conformance suite calls.
- ``chat``: a scripted chat model (in process).
- ``chat_server``: a local OpenAI-compatible endpoint that records request bodies.
- ``schema_chat``: a local endpoint that answers from the request's own schema.
- ``server_wire``: a wire the LangGraph Server tests serve by file path.
"""
