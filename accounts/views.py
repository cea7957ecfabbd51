"""Account pages of our own: the overview of a reader's account and deleting it.

Everything else under ``/accounts/`` (log in, sign up, email, password) is django-allauth's.
"""

from allauth.account.forms import ReauthenticateForm
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from .selectors import user_email_addresses
from .services import user_delete


@login_required
def account_overview(request):
    """GET ``/accounts/``: the signed-in user's email addresses and links to change them, to
    change the password, to the user's follows and API tokens, and to delete the account."""
    return render(
        request,
        "accounts/overview.html",
        {"email_addresses": user_email_addresses(user=request.user)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def account_delete(request):
    """GET ``/accounts/delete/`` asks for the password; POST with the right ``password``
    deletes the account and all its data (:func:`accounts.services.user_delete`), logs out and
    goes to the home page with a message.

    A wrong password shows the form again with "Incorrect password." and deletes nothing;
    failed attempts count towards allauth's ``login_failed`` rate limit, so the form cannot be
    used to guess the password of a session left open.
    """
    if request.method == "POST":
        form = ReauthenticateForm(data=request.POST, user=request.user)
        if form.is_valid():
            user_delete(user=request.user)
            logout(request)
            messages.success(request, "Your account and all its data have been deleted.")
            return redirect("topics:index")
    else:
        form = ReauthenticateForm(user=request.user)
    return render(request, "accounts/delete.html", {"form": form})
