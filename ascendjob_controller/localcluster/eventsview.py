"""events.k8s.io/v1 served over the core/v1 Event storage (see eventsapi.py).

The server hands requests for that API to an EventsView instead of the Api: every read
converts the stored core/v1 object, every write converts the body first and the answer
back. managedFields record the writer's own API version and field names, as upstream's
versioned field sets do.
"""

from __future__ import annotations

import json
from typing import Any

from ascendjob_controller.localcluster import builtin, eventsapi, managedfields
from ascendjob_controller.localcluster.deletion import DeleteOptions
from ascendjob_controller.localcluster.errors import not_found
from ascendjob_controller.localcluster.goquote import go_print
from ascendjob_controller.localcluster.resources import ResourceType
from ascendjob_controller.localcluster.store import Entry, dumps
from ascendjob_controller.localcluster.verbs import (
    APPLY_PATCH,
    INTERNAL_MANAGER,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    Api,
    ListResult,
    Result,
)

CORE = builtin.EVENTS
_FIELD_RENAMES = (("regarding.", "involvedObject."), ("reportingController", "reportingComponent"))


def convert_entry(entry: Entry) -> Entry:
    obj = eventsapi.to_new(entry.obj)
    return Entry(obj, dumps(obj))


def _fields(selector: str) -> str:
    for new, old in _FIELD_RENAMES:
        selector = selector.replace(new, old)
    return selector


class EventsView:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.store = api.store

    def _result(self, result: Result, warnings: list[str] | None = None) -> Result:
        """The core/v1 answer in the events.k8s.io/v1 form; `warnings` come before its own
        (this API's unknown fields, which the conversion to core/v1 would drop unseen)."""
        answer = result.answer
        if answer is not None and answer.get("kind") == "Status":
            answer = {**answer, "details": {**answer["details"], "group": "events.k8s.io"}}
            details = answer["details"]
            answer["details"] = {k: details[k] for k in ("name", "group", "kind", "uid")}
        warned = [*(warnings or ()), *result.warnings]
        return Result(convert_entry(result.entry), result.code, warned, answer)

    def _managed(
        self, old: dict[str, Any] | None, new_form: dict[str, Any], manager: str
    ) -> list[dict[str, Any]]:
        write = managedfields.Write(manager or "unknown", eventsapi.NEW_VERSION)
        schema = managedfields.fieldsets.builtin_schema("Event")
        return managedfields.record_update(old, new_form, schema, write)

    def get(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        return convert_entry(self.api.get(CORE, namespace, name))

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        result = self.api.list_objects(
            CORE, namespace, label_selector, _fields(field_selector), limit, continue_token
        )
        result.entries = [convert_entry(e) for e in result.entries]
        return result

    def list_at(
        self, rt: ResourceType, namespace: str | None, rv: int, labels: str = "", fields: str = ""
    ) -> ListResult:
        result = self.api.list_at(CORE, namespace, rv, labels, _fields(fields))
        result.entries = [convert_entry(e) for e in result.entries]
        return result

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        field_validation: str = "",
        dry_run: bool = False,
        manager: str = INTERNAL_MANAGER,
    ) -> Result:
        new_form = self.api.check_body(rt, body)
        warnings = self.api.prune_builtin(rt, new_form, field_validation)
        managed = self._managed(None, eventsapi.to_new(eventsapi.to_core(new_form)), manager)
        core = eventsapi.to_core(new_form)
        result = self.api.create(
            CORE, namespace, core, field_validation, dry_run, manager, managed, rt.group_version
        )
        return self._result(result, warnings)

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str = "",
        field_validation: str = "",
        dry_run: bool = False,
        manager: str = INTERNAL_MANAGER,
    ) -> Result:
        new_form = self.api.check_body(rt, body)
        warnings = self.api.prune_builtin(rt, new_form, field_validation)
        with self.store.lock:
            existing = self.store.get(CORE.group_resource, namespace, name)
            old = eventsapi.to_new(existing.obj) if existing else None
            managed = self._managed(old, eventsapi.to_new(eventsapi.to_core(new_form)), manager)
            core = eventsapi.to_core(new_form)
            result = self.api.update(
                CORE, namespace, name, core, subresource, field_validation, dry_run, manager,
                managed,
            )  # fmt: skip
        return self._result(result, warnings)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str = "",
        field_manager: str = "",
        field_validation: str = "",
        dry_run: bool = False,
        manager: str = INTERNAL_MANAGER,
        force: bool = False,
    ) -> Result:
        """Patches apply to the events.k8s.io/v1 form of the stored event."""
        from ascendjob_controller.localcluster import patch as patching

        if content_type == APPLY_PATCH:
            core_config = eventsapi.to_core(patch) if isinstance(patch, dict) else patch
            result = self.api.patch(
                CORE, namespace, name, content_type, core_config, subresource, field_manager,
                field_validation, dry_run, manager, force,
            )  # fmt: skip
            return self._result(result)
        strict = field_validation == "Strict"
        shown = go_print(patch) if strict and content_type == STRATEGIC_PATCH else None
        with self.store.lock:
            existing = self.store.get(CORE.group_resource, namespace, name)
            if existing is None:
                raise not_found(rt, name)
            current = eventsapi.to_new(existing.obj)
            try:
                if content_type == MERGE_PATCH:
                    new_form = patching.json_merge_patch(current, patch)
                elif content_type == JSON_PATCH:
                    new_form = patching.json_patch(current, patch)
                else:
                    new_form = patching.strategic_merge_patch(current, patch, "Event")
            except patching.PatchError as err:
                raise self.api.patch_error(rt, name, err, content_type) from err
            new_form = json.loads(json.dumps(new_form))
            if strict and isinstance(new_form, dict):
                self.api.refuse_unknown_in_patch(rt, new_form, shown)
            new_form.setdefault("metadata", {})["resourceVersion"] = existing.obj["metadata"][
                "resourceVersion"
            ]
            return self.update(
                rt, namespace, name, new_form, subresource, field_validation, dry_run, manager
            )

    def delete(self, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions) -> Result:
        return self._result(self.api.delete(CORE, namespace, name, opts))

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str,
        field_selector: str,
        opts: DeleteOptions,
    ) -> list[Entry]:
        entries = self.api.delete_collection(
            CORE, namespace, label_selector, _fields(field_selector), opts
        )
        return [convert_entry(e) for e in entries]
