"""The intermediate page an admin action shows before it acts (a form and Apply), for every
app's admin (topics' curation actions, papers' author merge and split)."""

from django.contrib.admin import helpers
from django.template.response import TemplateResponse

ACTION_ITEMS_SHOWN = 100


def action_page(model_admin, request, *, form, title, action, intro, items):
    """The page an action shows before it acts: what was selected (``items``, strings, the
    first ``ACTION_ITEMS_SHOWN``), the action's ``form`` and Apply. Posting it runs the action
    again with the same selection (ids, or every row matching the filters) and ``apply``."""
    items = list(items)
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "intro": intro,
        "opts": model_admin.opts,
        "form": form,
        "items": items[:ACTION_ITEMS_SHOWN],
        "items_hidden": max(len(items) - ACTION_ITEMS_SHOWN, 0),
        "action": action,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "selected_ids": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across", "0"),
        "media": model_admin.media + form.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/topics/action_form.html", context)
